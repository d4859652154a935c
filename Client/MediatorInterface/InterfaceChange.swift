import MediatorProtocol

/// One difference between two versions of an interface file, and whether
/// it breaks callers written against the old one.
public struct InterfaceChange: Sendable, Hashable, CustomStringConvertible {
    public var breaking: Bool
    /// The member that changed, as a path in the files
    /// (`actions.add.params.properties.due`; actions named, not numbered).
    public var member: String
    /// What changed, for people (`type narrowed from ["string","null"] to "string"`).
    public var change: String

    public init(breaking: Bool, member: String, change: String) {
        self.breaking = breaking
        self.member = member
        self.change = change
    }

    /// `breaking MEMBER: CHANGE` or `compatible MEMBER: CHANGE`.
    public var description: String { "\(breaking ? "breaking" : "compatible") \(member): \(change)" }

    /// `{"breaking", "member", "change"}`.
    public var json: JSONValue {
        ["breaking": .bool(breaking), "member": .string(member), "change": .string(change)]
    }
}
