import MediatorProtocol

/// What a snapshot reads from the broker's state rather than from counters:
/// figures of now (calls in flight, connections), so nothing is counted twice.
package struct LiveFigures: Sendable {
    package struct UID: Sendable, Equatable {
        package var connections = 0
        package var callsInFlight = 0
        package var queuedBytes = 0
        /// Descriptors sent by the uid that the daemon holds now.
        package var fdsInFlight = 0
        package init(connections: Int = 0, callsInFlight: Int = 0, queuedBytes: Int = 0, fdsInFlight: Int = 0) {
            self.connections = connections
            self.callsInFlight = callsInFlight
            self.queuedBytes = queuedBytes
            self.fdsInFlight = fdsInFlight
        }
    }

    package var uptimeNanoseconds: Int64 = 0
    package var connections = 0
    package var registeredTargets = 0
    package var subscriptions = 0
    /// Calls in flight by action entry (``BrokerStatistics/slot(target:action:)``).
    package var inFlightBySlot: [Int: Int] = [:]
    /// Calls held for a component being started, by target.
    package var heldByTarget: [String: Int] = [:]
    package var uids: [UInt32: UID] = [:]
    /// The descriptors the host passed, closed and holds (zero when it passes none).
    package var descriptors = DescriptorCounts()

    package init() {}
}

/// `mediator/stats`'s answer, built from the counters and the live figures.
package struct StatisticsSnapshot: Sendable {
    package var statistics: BrokerStatistics
    package var live: LiveFigures

    package init(statistics: BrokerStatistics, live: LiveFigures) {
        self.statistics = statistics
        self.live = live
    }

    /// The bucket bounds, once per answer rather than in every histogram.
    static var bucketBoundsJSON: JSONValue {
        .array((0..<LatencyHistogram.bucketCount).map { index in
            LatencyHistogram.upperBound(ofBucket: index).map { .int($0) } ?? .null
        })
    }

    /// One page of a reply: the targets after `after` (by name), at most
    /// `limit` of them and about `bytes` of JSON, so that a reply stays well
    /// within what a reader may have queued whatever the daemon counted.
    /// With `afterAction` too, the page begins inside the target `after`,
    /// with its actions after that one (a page that ended inside a target
    /// says so with `next_action`).
    package struct Page: Sendable {
        package var after: String?
        package var afterAction: String?
        package var limit: Int
        package var bytes: Int
        package init(after: String? = nil, afterAction: String? = nil, limit: Int = .max, bytes: Int = .max) {
            self.after = after
            self.afterAction = afterAction
            self.limit = limit
            self.bytes = bytes
        }
    }

    /// `target`: only that target (and its component); `slowCalls`: whether
    /// the slow-call log is included. The targets come in pages: `next`
    /// names the last target of a page when more follow, and `next_action`
    /// its last action when the page ended inside it. The first page (no
    /// `after`) has everything else too, later ones only `uptime_s` and
    /// their targets. The lists beside the targets (slow calls, components,
    /// uids) share at most half of the page's bytes; what does not fit is
    /// left out, newest slow calls kept, and counted in `omitted`.
    /// Every page has at least one target or action, so paging ends.
    package func json(target: String? = nil, slowCalls: Bool = true, page: Page = Page()) -> JSONValue {
        let pageBytes = max(1, page.bytes)
        var members: [String: JSONValue] = ["uptime_s": .double(Self.seconds(live.uptimeNanoseconds))]
        var used = 0
        if page.after == nil {
            members.merge(headerJSON()) { $1 }
            var side = Budget(bytes: pageBytes / Self.sideListsShare)
            var omitted: [String: JSONValue] = [:]
            func fit(_ entries: [JSONValue], _ name: String) -> [JSONValue] {
                let kept = side.fit(entries)
                if kept.count < entries.count { omitted[name] = .int(Int64(entries.count - kept.count)) }
                return kept
            }
            if slowCalls {
                var log = slowCallsJSON(only: target)
                // The newest first to fit, then back in order (oldest first).
                log.calls = fit(log.calls.reversed(), "slow_calls").reversed()
                members["slow_calls"] = log.json
            }
            members["components"] = .array(fit(componentsJSON(only: target), "components"))
            if target == nil { members["uids"] = .array(fit(uidsJSON(), "uids")) }
            if !omitted.isEmpty { members["omitted"] = .object(omitted) }
            used = side.used
        }
        let (entries, next, nextAction) = targetsPage(only: target, page: page, bytes: max(1, pageBytes - used))
        members["targets"] = .array(entries)
        if let next { members["next"] = .string(next) }
        if let nextAction { members["next_action"] = .string(nextAction) }
        return .object(members)
    }

    /// The lists beside the targets take at most 1/this of a first page, so
    /// that targets always have the rest.
    static let sideListsShare = 2

    /// Entries kept while their JSON fits in `bytes`.
    struct Budget {
        let bytes: Int
        var used = 0

        mutating func fits(_ size: Int) -> Bool {
            guard used + size <= bytes else { return false }
            used += size
            return true
        }

        mutating func fit(_ entries: [JSONValue]) -> [JSONValue] {
            var kept: [JSONValue] = []
            for entry in entries {
                guard fits(entry.encoded.count) else { break }
                kept.append(entry)
            }
            return kept
        }
    }

    /// The targets of one page, and where the next page begins (nil, nil
    /// when this one is the last): a target entry whose actions do not all
    /// fit is cut after an action and continued on the next page, its
    /// totals repeated. The first entry and its first action always go in.
    func targetsPage(only target: String?, page: Page, bytes: Int) -> (entries: [JSONValue], next: String?, nextAction: String?) {
        var names = targetNames(only: target).map { Array($0.utf8) }
        if let after = page.after.map({ Array($0.utf8) }) {
            // Inside `after`: it stays; else the page begins after it.
            let inside = page.afterAction != nil
            names.removeAll { inside ? $0.lexicographicallyPrecedes(after) : !after.lexicographicallyPrecedes($0) }
        }
        var budget = Budget(bytes: bytes)
        var entries: [JSONValue] = []
        for nameBytes in names {
            let name = String(decoding: nameBytes, as: UTF8.self)
            let last = entries.last?["target"]?.stringValue
            guard entries.count < max(1, page.limit) else { return (entries, last, nil) }
            var slots = statistics.slots(ofTarget: name)
            if name == page.after, let afterAction = page.afterAction,
                let index = slots.firstIndex(where: { statistics.actions[$0].action == afterAction })
            {
                slots.removeFirst(index + 1)
            }
            let totals = targetJSON(name)
            guard budget.fits(totals.encoded.count) || entries.isEmpty else { return (entries, last, nil) }
            var actions: [JSONValue] = []
            var cut = false
            for slot in slots {
                let action = actionJSON(statistics.actions[slot], inFlight: live.inFlightBySlot[slot] ?? 0)
                guard budget.fits(action.encoded.count) || (entries.isEmpty && actions.isEmpty) else {
                    cut = true
                    break
                }
                actions.append(action)
            }
            // A target none of whose remaining actions fit waits for the next page.
            if cut && actions.isEmpty { return (entries, last, nil) }
            entries.append(Self.with(totals, actions: actions))
            if cut { return (entries, name, actions.last?["action"]?.stringValue) }
        }
        return (entries, nil, nil)
    }

    /// The members of the first page besides the lists.
    private func headerJSON() -> [String: JSONValue] {
        let daemon = statistics.daemon
        let inFlight = live.inFlightBySlot.values.reduce(0, +)
        let held = live.heldByTarget.values.reduce(0, +)
        return [
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
                "fds_received": .int(Int64(live.descriptors.received)),
                "fds_passed": .int(Int64(live.descriptors.passed)),
                "fds_released": .int(Int64(live.descriptors.released)),
                "fds_in_flight": .int(Int64(live.descriptors.inFlight)),
            ],
            "latency_bucket_bounds_ns": Self.bucketBoundsJSON,
        ]
    }

    /// The targets with counters or held calls, sorted byte by byte.
    func targetNames(only: String?) -> [String] {
        var names = Set(statistics.actions.map(\.target))
        names.formUnion(live.heldByTarget.keys)
        if let only { names = names.filter { $0 == only } }
        return names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    /// A target's totals over all its actions (`actions` left empty).
    func targetJSON(_ name: String) -> JSONValue {
        let slots = statistics.slots(ofTarget: name)
        var latency = LatencyHistogram()
        for slot in slots { latency.merge(statistics.actions[slot].latency) }
        return [
            "target": .string(name),
            "calls": .int(Int64(slots.reduce(0) { $0 + statistics.actions[$1].calls })),
            "errors": .int(Int64(slots.reduce(0) { $0 + statistics.actions[$1].errorCount })),
            "in_flight": .int(Int64(slots.reduce(0) { $0 + (live.inFlightBySlot[$1] ?? 0) })),
            "held": .int(Int64(live.heldByTarget[name] ?? 0)),
            "latency": Self.latencyJSON(latency, buckets: false),
            "actions": [],
        ]
    }

    static func with(_ target: JSONValue, actions: [JSONValue]) -> JSONValue {
        guard case .object(var members) = target else { return target }
        members["actions"] = .array(actions)
        return .object(members)
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
                "fds_in_flight": .int(Int64(now.fdsInFlight)),
                "quota_refusals": .object(counters.quotaRefusals.mapValues { .int(Int64($0)) }),
                "policy_denials": .int(Int64(counters.policyDenials)),
            ]
        }
    }

    /// The slow-call log's members; `calls` oldest first.
    struct SlowCallsJSON {
        var thresholdMilliseconds: Double
        var total: Int
        var calls: [JSONValue]
        var json: JSONValue {
            ["threshold_ms": .double(thresholdMilliseconds), "total": .int(Int64(total)), "calls": .array(calls)]
        }
    }

    func slowCallsJSON(only: String?) -> SlowCallsJSON {
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
        return SlowCallsJSON(
            thresholdMilliseconds: Self.milliseconds(statistics.slowCallThresholdNanoseconds),
            total: statistics.slowCalls.total, calls: calls)
    }

    /// Milliseconds with microsecond precision.
    static func milliseconds(_ nanoseconds: Int64) -> Double { Double(nanoseconds / 1000) / 1000 }
    static func seconds(_ nanoseconds: Int64) -> Double { Double(nanoseconds / 1_000_000) / 1000 }
}
