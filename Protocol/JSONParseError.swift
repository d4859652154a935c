/// Why a byte sequence is not the JSON expected, and where.
public struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The byte offset in the input where reading stopped.
    public var offset: Int
    /// What was wrong there (`unexpected data after the value`).
    public var reason: String
    /// An error at `offset`.
    public init(offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
    }
    public var description: String { "\(reason) at byte \(offset)" }
}
