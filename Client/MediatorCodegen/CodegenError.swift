/// Why an interface file cannot be turned into code: the member at fault,
/// by path (`actions[1] (list).result.properties.notes.items`), and the reason.
public struct CodegenError: Error, Hashable, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}
