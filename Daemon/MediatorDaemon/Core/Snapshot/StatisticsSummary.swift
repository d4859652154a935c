import MediatorProtocol
import MediatorStatistics

/// The statistics a ``BrokerSnapshot`` carries: the daemon's, each
/// action's, each uid's and each managed component's counts, so that
/// `stats` and `list`'s `calls_served` go on from where they were. Latency
/// histograms and the slow-call log start afresh in the successor: they
/// are large, and say how this process performed.
struct StatisticsSummary: Equatable, Sendable {
    var daemon: DaemonCounters
    /// In the order of their entries, without latencies.
    var actions: [ActionCounters]
    var uids: [UInt32: UIDCounters]
    var components: [String: ComponentCounters]
}

extension StatisticsSummary {
    var json: JSONValue {
        .object([
            "daemon": .object([
                "connections_opened": .count(daemon.connectionsOpened), "connections_refused": .count(daemon.connectionsRefused),
                "registrations": .count(daemon.registrations), "subscriptions": .count(daemon.subscriptions),
                "calls_routed": .count(daemon.callsRouted), "policy_denials": .count(daemon.policyDenials),
                "bad_frames": .count(daemon.badFrames), "backlog_disconnects": .count(daemon.backlogDisconnects),
            ]),
            "actions": .array(actions.map { counts in
                .object([
                    "target": .string(counts.target), "action": .string(counts.action), "calls": .count(counts.calls),
                    "ok": .count(counts.ok), "errors": .counts(counts.errors), "timeouts": .count(counts.timeouts),
                    "cancels": .count(counts.cancels), "caller_gone": .count(counts.callerGone),
                    "streams": .count(counts.streams), "partials": .count(counts.partials),
                ])
            }),
            "uids": .array(uids.sorted { $0.key < $1.key }.map { uid, counts in
                .object([
                    "uid": .count(uid), "connections_opened": .count(counts.connectionsOpened),
                    "quota_refusals": .counts(counts.quotaRefusals), "policy_denials": .count(counts.policyDenials),
                ])
            }),
            "components": .array(components.sorted { $0.key < $1.key }.map { target, counts in
                .object([
                    "target": .string(target), "activations": .count(counts.activations),
                    "start_failures": .counts(Dictionary(uniqueKeysWithValues: counts.startFailures.map { ($0.key.rawValue, $0.value) })),
                    "restarts": .count(counts.restarts), "idle_exits": .count(counts.idleExits),
                ])
            }),
        ])
    }

    init(snapshot members: SnapshotMembers) throws(SnapshotError) {
        let counters = try members.object("daemon")
        var daemon = DaemonCounters()
        daemon.connectionsOpened = try counters.integer("connections_opened")
        daemon.connectionsRefused = try counters.integer("connections_refused")
        daemon.registrations = try counters.integer("registrations")
        daemon.subscriptions = try counters.integer("subscriptions")
        daemon.callsRouted = try counters.integer("calls_routed")
        daemon.policyDenials = try counters.integer("policy_denials")
        daemon.badFrames = try counters.integer("bad_frames")
        daemon.backlogDisconnects = try counters.integer("backlog_disconnects")
        var actions: [ActionCounters] = []
        for entry in try members.objects("actions") {
            actions.append(ActionCounters(
                target: try entry.string("target"), action: try entry.string("action"), calls: try entry.integer("calls"),
                ok: try entry.integer("ok"), errors: try entry.counts("errors"), timeouts: try entry.integer("timeouts"),
                cancels: try entry.integer("cancels"), callerGone: try entry.integer("caller_gone"),
                streams: try entry.integer("streams"), partials: try entry.integer("partials")))
        }
        var uids: [UInt32: UIDCounters] = [:]
        for entry in try members.objects("uids") {
            uids[try entry.integer("uid")] = UIDCounters(
                connectionsOpened: try entry.integer("connections_opened"), quotaRefusals: try entry.counts("quota_refusals"),
                policyDenials: try entry.integer("policy_denials"))
        }
        var components: [String: ComponentCounters] = [:]
        for entry in try members.objects("components") {
            var failures: [ComponentCounters.StartFailure: Int] = [:]
            for (reason, count) in try entry.counts("start_failures") {
                guard let failure = ComponentCounters.StartFailure(rawValue: reason) else {
                    throw .malformed(path: entry.at("start_failures"), expected: "start failures by reason")
                }
                failures[failure] = count
            }
            components[try entry.string("target")] = ComponentCounters(
                activations: try entry.integer("activations"), startFailures: failures, restarts: try entry.integer("restarts"),
                idleExits: try entry.integer("idle_exits"))
        }
        self.init(daemon: daemon, actions: actions, uids: uids, components: components)
    }
}
