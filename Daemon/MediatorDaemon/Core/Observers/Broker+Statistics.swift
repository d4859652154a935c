import CoreMetrics
import MediatorProtocol
import MediatorStatistics
import NIOCore

/// Statistics (issue 12): the counters live in ``BrokerStatistics`` and are
/// bumped where the broker already handles each event; `mediator/stats`
/// adds what is read from the broker's state now (calls in flight and
/// held, connections, queued bytes), so nothing is counted twice.
extension Broker {
    /// A call's final answer (`code` nil for a result): counted, timed from
    /// forwarding, and logged as slow when it took the threshold or more.
    /// `now` nil (answers at shutdown): counted, not timed.
    @inline(__always)
    func recordAnswer(_ call: CallsInFlight.Call, code: String?, now: NIODeadline?) {
        let duration = now.map { ($0 - call.startedAt).nanoseconds }
        if let latencyMetrics, let duration, !latencyMetrics.record(slot: call.statisticsSlot, nanoseconds: duration) {
            // The entry's first timed answer: its names, not the call's (they differ for the overflow entry).
            let entry = statistics.actions[call.statisticsSlot]
            latencyMetrics.makeTimer(slot: call.statisticsSlot, target: entry.target, action: entry.action)
                .recordNanoseconds(duration)
        }
        guard statistics.answered(call.statisticsSlot, code: code, durationNanoseconds: duration),
            let duration, let now
        else { return }
        let caller = credentials(of: call.caller)
        statistics.logSlowCall(SlowCall(
            target: call.target, action: call.action, pid: caller?.pid, uid: caller?.uid, durationNanoseconds: duration,
            code: code ?? "ok", endedAtNanoseconds: (now - statisticsStart).nanoseconds))
    }

    /// The `code` of an error answer's body; errors only, so results are never decoded for it.
    /// Bounded to what the statistics keep by name (``ActionCounters/countedCode(_:)``).
    func errorCode(of body: ByteBuffer) -> String {
        decode(body)?["code"]?.stringValue.map(ActionCounters.countedCode) ?? ActionCounters.otherCode
    }

    /// From now on, each call's latency also goes to a timer of `factory`
    /// (label `mediator_call_duration_seconds`, dimensions target and action).
    func recordLatencies(to factory: any MetricsFactory) {
        latencyMetrics = CallLatencyMetrics(factory: factory)
    }

    /// The counters and the figures of now, for an exporter (`MediatorServer.statisticsSnapshot()`).
    package func statisticsSnapshot(now: NIODeadline) -> StatisticsSnapshot {
        StatisticsSnapshot(statistics: statistics, live: liveFigures(now: now))
    }

    /// `stats {"target"?: T, "slow"?: bool, "after"?: T, "after_action"?: A, "limit"?: n}`: granted like `monitor`.
    func statsAction(_ params: [String: JSONValue], _ connection: ConnectionID, now: NIODeadline) -> Result<JSONValue, MediatorError> {
        guard let peer = peers[connection] else { return .failure(MediatorError(.internal, "unknown connection")) }
        // The denial names the grant; say that stats is what needs it.
        if let denial = checkPolicy(.monitor, peer.credentials) {
            return .failure(MediatorError(denial.code, "stats: \(denial.message) (stats needs the \"monitor\" grant)"))
        }
        var target: String?
        if let raw = params["target"] {
            guard let name = raw.stringValue else { return .failure(MediatorError(.badRequest, "\"target\" must be a string")) }
            target = name
        }
        var slowCalls = true
        if let raw = params["slow"] {
            // A URL (`app://mediator/stats?slow=false`) carries it as a string.
            guard let flag = raw.boolValue ?? raw.stringValue.flatMap({ Bool($0) }) else {
                return .failure(MediatorError(.badRequest, "\"slow\" must be true or false"))
            }
            slowCalls = flag
        }
        // Paged like `list` (same members, same page size), so a daemon with
        // thousands of actions answers in frames a client can read; a page
        // may also end inside a target (`next_action`, passed as `after_action`).
        var page = StatisticsSnapshot.Page(bytes: listPageBytes)
        if let raw = params["after"] {
            guard let name = raw.stringValue else { return .failure(MediatorError(.badRequest, "\"after\" must be a target name")) }
            page.after = name
        }
        if let raw = params["after_action"] {
            guard let name = raw.stringValue, page.after != nil else {
                return .failure(MediatorError(.badRequest, "\"after_action\" must be an action name, given with \"after\""))
            }
            page.afterAction = name
        }
        if let raw = params["limit"] {
            guard let number = raw.intValue ?? raw.stringValue.flatMap({ Int64($0) }), number > 0 else {
                return .failure(MediatorError(.badRequest, "\"limit\" must be a positive integer"))
            }
            page.limit = Int(clamping: number)
        }
        let snapshot = statisticsSnapshot(now: now)
        var answer = snapshot.json(target: target, slowCalls: slowCalls, page: page)
        // The sections of other services (the NATS bridge), with the daemon's members: on the first page of all.
        if target == nil, page.after == nil, case .object(var members) = answer {
            for section in statisticsSections {
                if let value = section.read() { members[section.name] = value }
            }
            answer = .object(members)
        }
        return .success(answer)
    }

    /// The figures of now that a snapshot reports next to the counters.
    func liveFigures(now: NIODeadline) -> LiveFigures {
        var live = LiveFigures()
        live.uptimeNanoseconds = max(0, (now - statisticsStart).nanoseconds)
        live.connections = peers.count
        live.registeredTargets = registry.targets.count
        for call in inFlight.all { live.inFlightBySlot[call.statisticsSlot, default: 0] += 1 }
        for (target, component) in activation.components where !component.held.isEmpty {
            live.heldByTarget[target] = component.held.count
        }
        for (connection, peer) in peers {
            live.subscriptions += peer.patterns.count
            let uid = peer.credentials.uid
            live.uids[uid, default: LiveFigures.UID()].connections += 1
            live.uids[uid, default: LiveFigures.UID()].callsInFlight += callsInFlight(of: connection)
            live.uids[uid, default: LiveFigures.UID()].queuedBytes += quotas.queuedBytes(of: connection)
        }
        if let counts = descriptorCounts?() {
            live.descriptors = counts
            // A uid whose connections are gone may still have descriptors queued toward others.
            for (uid, held) in counts.inFlightByUID { live.uids[uid, default: LiveFigures.UID()].fdsInFlight = held }
        }
        return live
    }
}
