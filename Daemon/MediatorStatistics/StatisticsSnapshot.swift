import MediatorProtocol

/// What a snapshot reads from the broker's state rather than from counters:
/// figures of now (calls in flight, connections), so nothing is counted twice.
public struct LiveFigures: Sendable {
    public struct UID: Sendable, Equatable {
        public var connections = 0
        public var callsInFlight = 0
        public var queuedBytes = 0
        public init(connections: Int = 0, callsInFlight: Int = 0, queuedBytes: Int = 0) {
            self.connections = connections
            self.callsInFlight = callsInFlight
            self.queuedBytes = queuedBytes
        }
    }

    public var uptimeNanoseconds: Int64 = 0
    public var connections = 0
    public var registeredTargets = 0
    public var subscriptions = 0
    /// Calls in flight by action entry (``BrokerStatistics/slot(target:action:)``).
    public var inFlightBySlot: [Int: Int] = [:]
    /// Calls held for a component being started, by target.
    public var heldByTarget: [String: Int] = [:]
    public var uids: [UInt32: UID] = [:]

    public init() {}
}

/// `mediator/stats`'s answer, built from the counters and the live figures.
public struct StatisticsSnapshot: Sendable {
    public var statistics: BrokerStatistics
    public var live: LiveFigures

    public init(statistics: BrokerStatistics, live: LiveFigures) {
        self.statistics = statistics
        self.live = live
    }

    /// The bucket bounds, once per answer rather than in every histogram.
    static var bucketBoundsJSON: JSONValue {
        .array((0..<LatencyHistogram.bucketCount).map { index in
            LatencyHistogram.upperBound(ofBucket: index).map { .int($0) } ?? .null
        })
    }

    /// One page of targets: those after `after` (by name), at most `limit`
    /// of them and about `bytes` of JSON (at least one).
    public struct Page: Sendable {
        public var after: String?
        public var limit: Int
        public var bytes: Int
        public init(after: String? = nil, limit: Int = .max, bytes: Int = .max) {
            self.after = after
            self.limit = limit
            self.bytes = bytes
        }
    }

    /// `target`: only that target (and its component); `slowCalls`: whether
    /// the slow-call log is included. With `page`, the targets come in pages
    /// (`next` names the last one when more follow); the first page (no
    /// `after`) has everything else too, later ones only their targets.
    public func json(target: String? = nil, slowCalls: Bool = true, page: Page) -> JSONValue {
        guard target == nil else { return json(target: target, slowCalls: slowCalls) }
        var names = targetNames(only: nil).map { Array($0.utf8) }
        if let after = page.after.map({ Array($0.utf8) }) { names.removeAll { !after.lexicographicallyPrecedes($0) } }
        var entries: [JSONValue] = []
        var bytes = 0
        var next: String?
        for name in names {
            guard let entry = targetsJSON(names: [String(decoding: name, as: UTF8.self)]).first else { continue }
            let size = entry.encoded.count
            if entries.count >= max(1, page.limit) || (!entries.isEmpty && bytes + size > page.bytes) {
                next = entries.last?["target"]?.stringValue
                break
            }
            entries.append(entry)
            bytes += size
        }
        var members: [String: JSONValue]
        if page.after == nil, case .object(let everything) = json(slowCalls: slowCalls, targets: false) {
            members = everything
        } else {
            members = ["uptime_s": .double(Self.seconds(live.uptimeNanoseconds))]
        }
        members["targets"] = .array(entries)
        if let next { members["next"] = .string(next) }
        return .object(members)
    }

    /// `target`: only that target (and its component); `slowCalls`: whether the slow-call log is included.
    public func json(target: String? = nil, slowCalls: Bool = true) -> JSONValue {
        json(target: target, slowCalls: slowCalls, targets: true)
    }

    private func json(target: String? = nil, slowCalls: Bool, targets: Bool) -> JSONValue {
        let daemon = statistics.daemon
        let inFlight = live.inFlightBySlot.values.reduce(0, +)
        let held = live.heldByTarget.values.reduce(0, +)
        var members: [String: JSONValue] = [
            "uptime_s": .double(Self.seconds(live.uptimeNanoseconds)),
            "daemon": [
                "connections": .int(Int64(live.connections)),
                "connections_opened": .int(Int64(daemon.connectionsOpened)),
                "connections_refused": .int(Int64(daemon.connectionsRefused)),
                "registered_targets": .int(Int64(live.registeredTargets)),
                "registrations": .int(Int64(daemon.registrations)),
                "subscriptions": .int(Int64(live.subscriptions)),
                "subscriptions_added": .int(Int64(daemon.subscriptions)),
                "calls_routed": .int(Int64(daemon.callsRouted)),
                "calls_in_flight": .int(Int64(inFlight)),
                "calls_held": .int(Int64(held)),
                "policy_denials": .int(Int64(daemon.policyDenials)),
                "bad_frames": .int(Int64(daemon.badFrames)),
                "backlog_disconnects": .int(Int64(daemon.backlogDisconnects)),
            ],
            "latency_bucket_bounds_ns": Self.bucketBoundsJSON,
            "targets": .array(targets ? targetsJSON(names: targetNames(only: target)) : []),
            "components": .array(componentsJSON(only: target)),
        ]
        if target == nil { members["uids"] = .array(uidsJSON()) }
        if slowCalls { members["slow_calls"] = slowCallsJSON(only: target) }
        return .object(members)
    }

    /// The targets with counters or held calls, sorted byte by byte.
    func targetNames(only: String?) -> [String] {
        var names = Set(statistics.actions.map(\.target))
        names.formUnion(live.heldByTarget.keys)
        if let only { names = names.filter { $0 == only } }
        return names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    func targetsJSON(names: [String]) -> [JSONValue] {
        names.map { name in
            let slots = statistics.slots(ofTarget: name)
            let actions = slots.map { slot in actionJSON(statistics.actions[slot], inFlight: live.inFlightBySlot[slot] ?? 0) }
            var latency = LatencyHistogram()
            for slot in slots { latency.merge(statistics.actions[slot].latency) }
            return [
                "target": .string(name),
                "calls": .int(Int64(slots.reduce(0) { $0 + statistics.actions[$1].calls })),
                "errors": .int(Int64(slots.reduce(0) { $0 + statistics.actions[$1].errorCount })),
                "in_flight": .int(Int64(slots.reduce(0) { $0 + (live.inFlightBySlot[$1] ?? 0) })),
                "held": .int(Int64(live.heldByTarget[name] ?? 0)),
                "latency": Self.latencyJSON(latency, buckets: false),
                "actions": .array(actions),
            ]
        }
    }

    func actionJSON(_ counters: ActionCounters, inFlight: Int) -> JSONValue {
        var answers: [String: JSONValue] = ["ok": .int(Int64(counters.ok))]
        for (code, count) in counters.errors { answers[code] = .int(Int64(count)) }
        return [
            "action": .string(counters.action),
            "calls": .int(Int64(counters.calls)),
            "answers": .object(answers),
            "errors": .int(Int64(counters.errorCount)),
            "timeouts": .int(Int64(counters.timeouts)),
            "cancels": .int(Int64(counters.cancels)),
            "caller_gone": .int(Int64(counters.callerGone)),
            "streams": .int(Int64(counters.streams)),
            "partials": .int(Int64(counters.partials)),
            "in_flight": .int(Int64(inFlight)),
            "latency": Self.latencyJSON(counters.latency, buckets: true),
        ]
    }

    static func latencyJSON(_ histogram: LatencyHistogram, buckets: Bool) -> JSONValue {
        var members: [String: JSONValue] = ["count": .int(Int64(histogram.count))]
        if let p50 = histogram.quantile(0.5) { members["p50_ms"] = .double(milliseconds(p50)) }
        if let p99 = histogram.quantile(0.99) { members["p99_ms"] = .double(milliseconds(p99)) }
        if histogram.count > 0 {
            members["mean_ms"] = .double(milliseconds(histogram.sumNanoseconds / Int64(histogram.count)))
        }
        if buckets { members["buckets"] = .array(histogram.counts.map { .int(Int64($0)) }) }
        return .object(members)
    }

    func componentsJSON(only: String?) -> [JSONValue] {
        statistics.components.keys.filter { only == nil || $0 == only }.sorted().compactMap { name in
            guard let counters = statistics.components[name] else { return nil }
            var failures: [String: JSONValue] = [:]
            for (reason, count) in counters.startFailures { failures[reason.rawValue] = .int(Int64(count)) }
            return [
                "target": .string(name),
                "activations": .int(Int64(counters.activations)),
                "start_failures": .object(failures),
                "restarts": .int(Int64(counters.restarts)),
                "idle_exits": .int(Int64(counters.idleExits)),
            ]
        }
    }

    func uidsJSON() -> [JSONValue] {
        Set(statistics.uids.keys).union(live.uids.keys).sorted().map { uid in
            let counters = statistics.uids[uid] ?? UIDCounters()
            let now = live.uids[uid] ?? LiveFigures.UID()
            return [
                "uid": .int(Int64(uid)),
                "connections": .int(Int64(now.connections)),
                "connections_opened": .int(Int64(counters.connectionsOpened)),
                "calls_in_flight": .int(Int64(now.callsInFlight)),
                "queued_bytes": .int(Int64(now.queuedBytes)),
                "quota_refusals": .object(counters.quotaRefusals.mapValues { .int(Int64($0)) }),
                "policy_denials": .int(Int64(counters.policyDenials)),
            ]
        }
    }

    func slowCallsJSON(only: String?) -> JSONValue {
        let calls = statistics.slowCalls.entries.filter { only == nil || $0.target == only }.map { call -> JSONValue in
            var members: [String: JSONValue] = [
                "target": .string(call.target), "action": .string(call.action),
                "duration_ms": .double(Self.milliseconds(call.durationNanoseconds)), "code": .string(call.code),
                "at_s": .double(Self.seconds(call.endedAtNanoseconds)),
            ]
            if let pid = call.pid { members["pid"] = .int(Int64(pid)) }
            if let uid = call.uid { members["uid"] = .int(Int64(uid)) }
            return .object(members)
        }
        return [
            "threshold_ms": .double(Self.milliseconds(statistics.slowCallThresholdNanoseconds)),
            "total": .int(Int64(statistics.slowCalls.total)),
            "calls": .array(calls),
        ]
    }

    /// Milliseconds with microsecond precision.
    static func milliseconds(_ nanoseconds: Int64) -> Double { Double(nanoseconds / 1000) / 1000 }
    static func seconds(_ nanoseconds: Int64) -> Double { Double(nanoseconds / 1_000_000) / 1000 }
}
