import MediatorProtocol

/// One event delivered to a subscription.
public struct MediatorEvent: Sendable, Hashable {
    /// The event's name (`user.login`), which the subscription's patterns matched.
    public var name: String
    /// The event's `data` member; nil when the event had none.
    public var data: JSONValue?

    /// An event as ``MediatorClient/subscribe(_:)`` delivers it.
    public init(name: String, data: JSONValue? = nil) {
        self.name = name
        self.data = data
    }
}

/// Subscription patterns (contract section 6): an exact name, a prefix ending
/// in `.*` (`user.*` matches `user.login` and `user.a.b`, not `user`), or `*`.
enum EventPattern {
    static func matches(_ pattern: String, _ name: String) -> Bool {
        if pattern == "*" { return true }
        let patternBytes = pattern.utf8
        if patternBytes.count >= 2, patternBytes.last == UInt8(ascii: "*") {
            let prefix = patternBytes.dropLast()  // keeps the dot
            if prefix.last == UInt8(ascii: ".") {
                let nameBytes = name.utf8
                return nameBytes.count > prefix.count && nameBytes.starts(with: prefix)
            }
        }
        return pattern == name
    }

    static func matchesAny(_ patterns: [String], _ name: String) -> Bool {
        patterns.contains { matches($0, name) }
    }
}
