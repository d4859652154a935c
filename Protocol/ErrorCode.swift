/// The error codes the daemon puts on the wire (contract section 7).
///
/// Components may answer with codes of their own; those travel as
/// ``MediatorError/code`` strings unchanged, so the code is a string-backed
/// struct rather than a closed enum.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let badRequest = ErrorCode("bad_request")
    public static let frameTooLarge = ErrorCode("frame_too_large")
    public static let unsupportedProtocol = ErrorCode("unsupported_protocol")
    public static let targetNotFound = ErrorCode("target_not_found")
    public static let actionNotFound = ErrorCode("action_not_found")
    public static let invalidParams = ErrorCode("invalid_params")
    public static let alreadyRegistered = ErrorCode("already_registered")
    public static let forbidden = ErrorCode("forbidden")
    public static let timeout = ErrorCode("timeout")
    public static let cancelled = ErrorCode("cancelled")
    public static let componentUnavailable = ErrorCode("component_unavailable")
    public static let activationFailed = ErrorCode("activation_failed")
    public static let overloaded = ErrorCode("overloaded")
    /// Descriptors for a peer that did not say `"fds": true` in `hello` (contract section 8).
    public static let fdsNotSupported = ErrorCode("fds_not_supported")
    public static let `internal` = ErrorCode("internal")
    /// An extension (docs/protocol.md): a result that does not match the
    /// action's declared `result` schema, from the daemon; the client library
    /// also uses it when a typed call's result does not decode as asked.
    public static let invalidResult = ErrorCode("invalid_result")
}

/// An error as the wire carries it: a code, a message for people, optional data.
public struct MediatorError: Error, Hashable, Sendable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    public var data: JSONValue?

    public init(_ code: ErrorCode, _ message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// The `error` member's value.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["code": .string(code.rawValue), "message": .string(message)]
        if let data { members["data"] = data }
        return .object(members)
    }

    /// Reads an `error` member; nil when it is not an object with a string `code`.
    public init?(json: JSONValue) {
        guard let code = json["code"]?.stringValue else { return nil }
        self.init(ErrorCode(code), json["message"]?.stringValue ?? "", data: json["data"])
    }
}
