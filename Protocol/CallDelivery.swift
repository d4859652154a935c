/// Whether a call that failed reached a component, as its error's
/// `data.delivered` says (docs/protocol.md, "Whether a failed call ran"):
/// what a caller looks at before retrying an action that must not run twice.
public enum CallDelivery: Sendable, Hashable {
    /// Handed to a component, which may have run it: a retry may run it twice.
    case yes
    /// No component got it: a retry runs it at most once.
    case no
    /// Nobody on the way can tell (a host that vanished, an error a component
    /// made itself, a library's own error).
    case unknown

    /// The member's value on the wire: true, false, or null.
    public var json: JSONValue {
        switch self {
        case .yes: .bool(true)
        case .no: .bool(false)
        case .unknown: .null
        }
    }

    /// The member as read: anything but a boolean (absent, null) is unknown.
    public init(json: JSONValue?) {
        switch json {
        case .bool(true)?: self = .yes
        case .bool(false)?: self = .no
        default: self = .unknown
        }
    }
}

extension MediatorError {
    /// The member of `data` that says whether the call reached a component.
    public static let deliveredMember = "delivered"

    /// Whether the failed call reached a component: `.unknown` when the
    /// error does not say (an object `data` without a boolean `delivered`,
    /// or no object at all).
    public var delivered: CallDelivery {
        guard case .object(let members)? = data else { return .unknown }
        return CallDelivery(json: members[Self.deliveredMember])
    }

    /// This error with `data.delivered` set: added to an object `data` (or
    /// to a new one when there is none). A `data` that is not an object is
    /// left as it is: only errors a component makes can have one, and those
    /// pass through unchanged.
    public func delivered(_ delivery: CallDelivery) -> MediatorError {
        var members: [String: JSONValue]
        switch data {
        case nil: members = [:]
        case .object(let existing)?: members = existing
        default: return self
        }
        members[Self.deliveredMember] = delivery.json
        return MediatorError(code, message, data: .object(members))
    }
}
