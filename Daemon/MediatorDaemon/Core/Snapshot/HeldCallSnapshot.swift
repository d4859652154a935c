import MediatorProtocol

/// A call held for a managed component that is starting, in a
/// ``BrokerSnapshot`` (issue 28): the successor holds it for the same
/// component and forwards it when the component registers, as the old
/// process would have. Members are the JSON text exactly as it arrived
/// (the params, the caller's id, the trace context), so the forwarded
/// request is the same bytes. A call that carries descriptors or came over
/// the NATS bridge is never in a snapshot (``isCarried``): the host waits
/// for those to go out, or answers them, before it hands over.
struct HeldCallSnapshot: Equatable, Sendable {
    var caller: ConnectionID
    var target: String
    var action: String
    /// The params' JSON text; nil when the request had none.
    var params: String?
    /// The caller's id as JSON text; nil for a oneway call.
    var callerID: String?
    /// The request's own `timeout_ms`, when it gave one.
    var timeoutMs: Int64?
    /// Until the call's own deadline (nil for a oneway call); negative once passed.
    var remainingNanoseconds: Int64?
    var more: Bool
    var viaURL: Bool
    /// `traceparent` and `tracestate` as JSON text, as they arrived.
    var traceparent: String?
    var tracestate: String?
}

/// A `mediator/start` waiting for its component to register, in a ``BrokerSnapshot``.
struct StartWaiterSnapshot: Equatable, Sendable {
    var connection: ConnectionID
    var target: String
    /// The caller's id as JSON text; nil for a oneway `start`.
    var callerID: String?
}

extension ManagedComponent.HeldCall {
    /// Whether a snapshot can carry it: descriptors would need a place of
    /// their own in the hand-over, and a remote caller's bridge connection
    /// is not handed over.
    var isCarried: Bool { request.descriptors == nil && request.remote == nil }
}

extension HeldCallSnapshot {
    var json: JSONValue {
        var members: [String: JSONValue] = [
            "caller": .count(caller), "target": .string(target), "action": .string(action), "more": .bool(more),
            "via_url": .bool(viaURL),
        ]
        let optional: [(String, JSONValue?)] = [
            ("params", params.map(JSONValue.string)), ("caller_id", callerID.map(JSONValue.string)),
            ("timeout_ms", timeoutMs.map(JSONValue.int)), ("remaining_ns", remainingNanoseconds.map(JSONValue.int)),
            ("traceparent", traceparent.map(JSONValue.string)), ("tracestate", tracestate.map(JSONValue.string)),
        ]
        for case let (key, value?) in optional { members[key] = value }
        return .object(members)
    }

    init(snapshot members: SnapshotMembers) throws(SnapshotError) {
        func optionalInteger(_ key: String) throws(SnapshotError) -> Int64? {
            members.members[key] == nil ? nil : try members.integer(key)
        }
        self.init(
            caller: try members.integer("caller"), target: try members.string("target"), action: try members.string("action"),
            params: try members.optionalString("params"), callerID: try members.optionalString("caller_id"),
            timeoutMs: try optionalInteger("timeout_ms"), remainingNanoseconds: try optionalInteger("remaining_ns"),
            more: try members.bool("more"), viaURL: try members.bool("via_url"),
            traceparent: try members.optionalString("traceparent"), tracestate: try members.optionalString("tracestate"))
    }
}

extension StartWaiterSnapshot {
    var json: JSONValue {
        var members: [String: JSONValue] = ["connection": .count(connection), "target": .string(target)]
        if let callerID { members["caller_id"] = .string(callerID) }
        return .object(members)
    }

    init(snapshot members: SnapshotMembers) throws(SnapshotError) {
        self.init(
            connection: try members.integer("connection"), target: try members.string("target"),
            callerID: try members.optionalString("caller_id"))
    }
}
