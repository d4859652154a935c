/// A request id: an integer or a string of at most 256 bytes.
public enum MessageID: Hashable, Sendable, CustomStringConvertible {
    /// An integer id.
    case int(Int64)
    /// A string id, at most ``maxStringBytes`` bytes of UTF-8.
    case string(String)

    /// The longest string id the contract allows, in bytes.
    public static let maxStringBytes = 256

    /// Reads an id; nil when the value is not a valid id.
    public init?(json: JSONValue) {
        switch json {
        case .string(let text) where text.utf8.count <= MessageID.maxStringBytes: self = .string(text)
        case .int, .double:
            guard let number = json.intValue else { return nil }
            self = .int(number)
        default: return nil
        }
    }

    /// The id as the wire writes it.
    public var json: JSONValue {
        switch self {
        case .int(let number): return .int(number)
        case .string(let text): return .string(text)
        }
    }

    public var description: String { json.jsonText }
}
