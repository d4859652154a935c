/// Why a byte sequence is not the JSON expected, and where.
public struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    public var offset: Int
    public var reason: String
    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }
    public var description: String { "\(reason) at byte \(offset)" }
}
