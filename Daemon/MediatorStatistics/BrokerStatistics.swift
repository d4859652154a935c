/// Everything the broker counts, without I/O or clocks: the broker passes
/// durations and times in. Per-action entries live in one array and are
/// never removed, so the index a call keeps while in flight stays valid;
/// their number is capped (``maxActionEntries``), past which new
/// target/action pairs count under one ``overflowSlot`` entry (`*`/`*`).
package struct BrokerStatistics: Sendable {
    static let maxActionEntries = 4096
    static let overflowTarget = "*"

    struct ActionKey: Hashable {
        var target: String
        var action: String
    }

    package private(set) var actions: [ActionCounters] = []
    private var slots: [ActionKey: Int] = [:]
    /// Each target's entries, for `list`'s calls_served and a one-target snapshot.
    private var slotsByTarget: [String: [Int]] = [:]
    private var overflowSlot: Int?
    let maxActionEntries: Int

    package var daemon = DaemonCounters()
    package private(set) var uids: [UInt32: UIDCounters] = [:]
    package private(set) var components: [String: ComponentCounters] = [:]
    package private(set) var slowCalls: SlowCallLog
    /// Final answers at least this late go to ``slowCalls``.
    package var slowCallThresholdNanoseconds: Int64

    package init(slowCallThresholdNanoseconds: Int64 = 1_000_000_000, slowCallCapacity: Int = 64, maxActionEntries: Int = Self.maxActionEntries) {
        self.slowCallThresholdNanoseconds = slowCallThresholdNanoseconds
        self.slowCalls = SlowCallLog(capacity: slowCallCapacity)
        self.maxActionEntries = max(1, maxActionEntries)
    }

    // MARK: - Calls

    /// The entry of a target's action, made on first use: the one
    /// dictionary lookup a call costs, done once when it is routed.
    package mutating func slot(target: String, action: String) -> Int {
        let key = ActionKey(target: target, action: action)
        if let slot = slots[key] { return slot }
        guard actions.count < maxActionEntries - 1 else { return overflow() }
        let slot = actions.count
        actions.append(ActionCounters(target: target, action: action))
        slots[key] = slot
        slotsByTarget[target, default: []].append(slot)
        return slot
    }

    private mutating func overflow() -> Int {
        if let overflowSlot { return overflowSlot }
        let slot = actions.count
        actions.append(ActionCounters(target: Self.overflowTarget, action: Self.overflowTarget))
        slotsByTarget[Self.overflowTarget, default: []].append(slot)
        overflowSlot = slot
        return slot
    }

    /// A call forwarded; `stream` when it asked for partial results.
    @inline(__always)
    package mutating func callRouted(_ slot: Int, stream: Bool) {
        actions[slot].calls += 1
        if stream { actions[slot].streams += 1 }
        daemon.callsRouted += 1
    }

    package mutating func partial(_ slot: Int) { actions[slot].partials += 1 }

    /// A call's final answer: `code` nil for a result. `duration` nil when
    /// the time is not known (answers at shutdown): then no latency.
    /// Returns whether the call was slow (the caller then adds it to the log
    /// with ``logSlowCall(_:)``, knowing who called).
    @inline(__always)
    package mutating func answered(_ slot: Int, code: String?, durationNanoseconds: Int64?) -> Bool {
        if let code { actions[slot].countError(code) } else { actions[slot].ok += 1 }
        guard let duration = durationNanoseconds else { return false }
        actions[slot].latency.record(nanoseconds: duration)
        return duration >= slowCallThresholdNanoseconds
    }

    /// A call held for its component that ended without being forwarded:
    /// counted as a call of its action with the daemon's answer `code`
    /// (`timeout`, `activation_failed`, `cancelled`), or as gone when its
    /// caller left (`code` nil); untimed, and not among the calls routed.
    package mutating func heldCallEnded(_ slot: Int, code: String?) {
        actions[slot].calls += 1
        guard let code else {
            actions[slot].callerGone += 1
            return
        }
        actions[slot].countError(code)
        if code == "timeout" { actions[slot].timeouts += 1 }
        if code == "cancelled" { actions[slot].cancels += 1 }
    }

    package mutating func timedOut(_ slot: Int) { actions[slot].timeouts += 1 }
    package mutating func cancelled(_ slot: Int) { actions[slot].cancels += 1 }
    package mutating func callerGone(_ slot: Int) { actions[slot].callerGone += 1 }

    /// The call's code is kept as the counters keep it (``ActionCounters/countedCode(_:)``).
    package mutating func logSlowCall(_ call: SlowCall) {
        var call = call
        call.code = ActionCounters.countedCode(call.code)
        slowCalls.append(call)
    }

    /// Calls forwarded to a target, all its actions together.
    package func calls(ofTarget target: String) -> Int {
        (slotsByTarget[target] ?? []).reduce(0) { $0 + actions[$1].calls }
    }

    package func slots(ofTarget target: String) -> [Int] { slotsByTarget[target] ?? [] }

    /// An action's counts as a snapshot of the daemon's state carried them
    /// (MediatorDaemon's Core/Snapshot), on its entry (the overflow entry for
    /// `*`/`*`); its latencies start afresh. Returns the entry's slot.
    @discardableResult
    package mutating func restoreCounts(of counts: ActionCounters) -> Int {
        let isOverflow = counts.target == Self.overflowTarget && counts.action == Self.overflowTarget
        let slot = isOverflow ? overflow() : self.slot(target: counts.target, action: counts.action)
        actions[slot].calls = counts.calls
        actions[slot].ok = counts.ok
        actions[slot].errors = counts.errors
        actions[slot].timeouts = counts.timeouts
        actions[slot].cancels = counts.cancels
        actions[slot].callerGone = counts.callerGone
        actions[slot].streams = counts.streams
        actions[slot].partials = counts.partials
        return slot
    }

    // MARK: - Peers and components

    /// Each uid's and each managed component's counts as a snapshot of the
    /// daemon's state carried them (MediatorDaemon's Core/Snapshot).
    package mutating func restoreCounts(uids: [UInt32: UIDCounters], components: [String: ComponentCounters]) {
        self.uids = uids
        self.components = components
    }

    package mutating func connectionOpened(uid: UInt32) {
        daemon.connectionsOpened += 1
        uids[uid, default: UIDCounters()].connectionsOpened += 1
    }

    package mutating func quotaRefused(uid: UInt32, quota: String) {
        uids[uid, default: UIDCounters()].quotaRefusals[quota, default: 0] += 1
    }

    package mutating func policyDenied(uid: UInt32) {
        daemon.policyDenials += 1
        uids[uid, default: UIDCounters()].policyDenials += 1
    }

    package mutating func componentActivated(_ target: String) { components[target, default: ComponentCounters()].activations += 1 }
    package mutating func componentRestarted(_ target: String) { components[target, default: ComponentCounters()].restarts += 1 }
    package mutating func componentIdleExit(_ target: String) { components[target, default: ComponentCounters()].idleExits += 1 }
    package mutating func componentStartFailed(_ target: String, _ reason: ComponentCounters.StartFailure) {
        components[target, default: ComponentCounters()].startFailures[reason, default: 0] += 1
    }
}
