import NIOCore

/// When a line read from a peer is handled at once and when it queues, and
/// how long the dispatch of queued lines runs before yielding to reads.
/// Pure: the host passes the time in, so tests drive it with a fake clock.
///
/// A *light* connection (nothing queued from it for `memory`) gets its lines
/// handled as they are read, a few per uid per `window`, so a flood spread
/// over many connections still queues. A connection whose line had to queue
/// counts as backlogged for `memory`. While a light connection is active
/// beside backlogged ones the daemon is *contended*: queued lines are handled
/// in short slices with reads between them, so the light peer's next line
/// waits about one slice; otherwise one busy peer gets long slices.
struct DispatchPolicy {
    var atOncePerWindow = 8
    var window = TimeAmount.microseconds(50)
    var memory = TimeAmount.milliseconds(50)
    var sharedSlice = TimeAmount.microseconds(1)
    var soloSlice = TimeAmount.microseconds(50)
    /// Past this many remembered connections, expired ones are dropped.
    var rememberedLimit = 4096

    private var turns: [UInt32: Int] = [:]
    private var windowStart = NIODeadline.uptimeNanoseconds(0)
    private var backloggedUntil: [ConnectionID: NIODeadline] = [:]
    private var anyBackloggedUntil = NIODeadline.uptimeNanoseconds(0)
    private var contendedUntil = NIODeadline.uptimeNanoseconds(0)

    /// Whether a line from `connection` (of `uid`) is handled now rather
    /// than queued; `nothingQueued` says its queue is empty. Counts the turn.
    mutating func handlesAtOnce(_ connection: ConnectionID, uid: UInt32, nothingQueued: Bool, now: NIODeadline) -> Bool {
        guard nothingQueued, backloggedUntil[connection].map({ $0 <= now }) ?? true else { return false }
        if now - windowStart >= window {
            turns.removeAll(keepingCapacity: true)
            windowStart = now
        }
        // uid 0 is the system itself, exempt here as from the quotas; its
        // lines (mostly system components' answers) do not make the daemon
        // contended either, or a flood's own answers would slow the flood
        // down with nobody to protect. Another uid's light line beside a
        // backlog does.
        if uid != 0 {
            let used = turns[uid, default: 0]
            guard used < atOncePerWindow else { return false }
            turns[uid] = used + 1
            if now < anyBackloggedUntil { contendedUntil = now + memory }
        }
        return true
    }

    /// A line from `connection` was queued.
    mutating func queued(_ connection: ConnectionID, now: NIODeadline) {
        if backloggedUntil.count > rememberedLimit { backloggedUntil = backloggedUntil.filter { $0.value > now } }
        backloggedUntil[connection] = now + memory
        anyBackloggedUntil = now + memory
    }

    func isContended(at now: NIODeadline) -> Bool { now < contendedUntil }

    /// How long a dispatch that starts `now` may run.
    func slice(at now: NIODeadline) -> TimeAmount { isContended(at: now) ? sharedSlice : soloSlice }

    mutating func forget(_ connection: ConnectionID) {
        backloggedUntil[connection] = nil
    }
}
