// The wire types a user of the library needs at once (MediatorError,
// JSONValue, ErrorCode, the generated types' protocols) come with
// `import MediatorClient`: one product and one import for a user's package.
@_exported import MediatorProtocol
