import MediatorProtocol

/// The schema of a file descriptor sent with a message (contract section 8,
/// issue 26): `{"type": "object", "format": "fd"}`, whose value is
/// `{"$fd": I}`. JSON Schema's `format` names what a value means beyond its
/// JSON type, as `"format": "binary"` does in OpenAPI; the daemon checks it
/// (``Schema/isDescriptor``), and the generators make it a handle that
/// closes its descriptor on drop.
public enum DescriptorSchema {
    /// The keywords a descriptor's schema may have: it stands for a
    /// descriptor, so nothing about its JSON may be constrained further.
    static let keywords = ["format", "type", "description", "title"]

    /// Whether `schema` itself is a descriptor's (a `$ref` is not followed).
    public static func isDescriptor(_ schema: JSONValue) -> Bool {
        schema["format"] == .string(Schema.descriptorFormat)
    }

    /// Whether a value of `schema` can hold a descriptor: `schema` is one,
    /// or one is below it (members, items, alternatives, `$ref`s into
    /// `definitions`, the root's `$defs`).
    public static func reaches(_ schema: JSONValue, definitions: [String: JSONValue]) -> Bool {
        var visited: Set<String> = []
        return reaches(schema, definitions: definitions, visited: &visited, depth: 0)
    }

    private static func reaches(
        _ schema: JSONValue, definitions: [String: JSONValue], visited: inout Set<String>, depth: Int
    ) -> Bool {
        guard depth <= InterfaceChecker.maxSchemaDepth, let members = schema.objectValue else { return false }
        if isDescriptor(schema) { return true }
        if let name = InterfaceChecker.referencedName(schema) {
            guard visited.insert(name).inserted, let target = definitions[name] else { return false }
            return reaches(target, definitions: definitions, visited: &visited, depth: depth + 1)
        }
        var below: [JSONValue] = []
        below += members["properties"]?.objectValue.map { Array($0.values) } ?? []
        below += [members["items"], members["additionalProperties"]].compactMap { $0 }
        for keyword in InterfaceChecker.alternativeKeywords { below += members[keyword]?.arrayValue ?? [] }
        return below.contains { reaches($0, definitions: definitions, visited: &visited, depth: depth + 1) }
    }
}
