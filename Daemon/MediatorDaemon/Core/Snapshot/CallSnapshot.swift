import MediatorProtocol

/// One call in flight in a ``BrokerSnapshot``. Its times are relative to
/// the snapshot's moment; its result schema and statistics entry are found
/// again from the registry and the statistics on restore.
struct CallSnapshot: Equatable, Sendable {
    var daemonID: Int64
    var caller: ConnectionID
    /// The caller's id exactly as it arrived (JSON text), echoed on every response.
    var callerIDBytes: [UInt8]
    var callee: ConnectionID
    var target: String
    var action: String
    var instance: Int
    var more: Bool
    var timeoutMs: Int64
    /// Until its deadline; negative when it had passed and the wake-up had not yet come.
    var remainingNanoseconds: Int64
    /// Since it was forwarded, for its latency and the monitor's timing.
    var elapsedNanoseconds: Int64
}

extension CallSnapshot {
    var json: JSONValue {
        .object([
            "daemon_id": .int(daemonID), "caller": .count(caller),
            "caller_id": .string(String(decoding: callerIDBytes, as: UTF8.self)), "callee": .count(callee),
            "target": .string(target), "action": .string(action), "instance": .count(instance), "more": .bool(more),
            "timeout_ms": .int(timeoutMs), "remaining_ns": .int(remainingNanoseconds), "elapsed_ns": .int(elapsedNanoseconds),
        ])
    }

    init(snapshot members: SnapshotMembers) throws(SnapshotError) {
        self.init(
            daemonID: try members.integer("daemon_id"), caller: try members.integer("caller"),
            callerIDBytes: Array(try members.string("caller_id").utf8), callee: try members.integer("callee"),
            target: try members.string("target"), action: try members.string("action"), instance: try members.integer("instance"),
            more: try members.bool("more"), timeoutMs: try members.integer("timeout_ms"),
            remainingNanoseconds: try members.integer("remaining_ns"), elapsedNanoseconds: try members.integer("elapsed_ns"))
    }
}
