import NIOCore

/// When a line read from a peer is handled at once and when it queues, and
/// how long the dispatch of queued lines runs before yielding to reads.
/// Pure: the host passes the time in, so tests drive it with a fake clock.
///
/// A *light* connection (nothing queued from it for `memory`) gets its lines
/// handled as they are read, as long as its uid has *credit*: time to spend
/// handling lines at once. Each such line is charged the time it took (at
/// least `lineCharge`), and credit comes back at half the wall time, up to
/// `burst`. So what a uid's lines cost, not how many there are, decides when
/// they queue: a line that publishes to 500 subscribers uses up the credit
/// at once, and the lines behind it wait their fair turn instead of holding
/// every other uid's reads; a flood of tiny lines spread over many
/// connections still queues after about `burst / lineCharge` of them.
/// (Counting lines per window of wall time did not hold: a line longer than
/// the window started a new window, so each costly line counted as the first.)
///
/// A connection whose line had to queue counts as backlogged for `memory`.
/// While a light connection is active beside backlogged ones the daemon is
/// *contended*: queued lines are handled in short slices with reads between
/// them, so the light peer's next line waits about one slice; otherwise one
/// busy peer gets long slices.
struct FairDispatch {
    /// The most handling time a uid may have banked for lines handled at once.
    var burst = TimeAmount.microseconds(50)
    /// What a line is charged at least, however quick it was.
    var lineCharge = TimeAmount.microseconds(4)
    var memory = TimeAmount.milliseconds(50)
    var sharedSlice = TimeAmount.microseconds(1)
    var soloSlice = TimeAmount.microseconds(50)
    /// Past this many remembered connections (or uids), stale ones are dropped.
    var rememberedLimit = 4096

    /// A uid's credit in nanoseconds, as of `at`.
    private struct Credit {
        var nanoseconds: Int64
        var at: NIODeadline
    }

    private var credits: [UInt32: Credit] = [:]
    private var backloggedUntil: [ConnectionID: NIODeadline] = [:]
    private var anyBackloggedUntil = NIODeadline.uptimeNanoseconds(0)
    private var contendedUntil = NIODeadline.uptimeNanoseconds(0)

    /// Whether a line from `connection` (of `uid`) is handled now rather
    /// than queued; `nothingQueued` says its queue is empty. A line handled
    /// at once is then charged with ``handled(uid:from:to:)``.
    mutating func handlesAtOnce(_ connection: ConnectionID, uid: UInt32, nothingQueued: Bool, now: NIODeadline) -> Bool {
        // `anyBackloggedUntil` is the latest of them all: past it, no
        // connection is backlogged, and none is looked up.
        guard nothingQueued, now >= anyBackloggedUntil || backloggedUntil[connection].map({ $0 <= now }) ?? true else {
            return false
        }
        // uid 0 is the system itself, exempt here as from the quotas; its
        // lines (mostly system components' answers) do not make the daemon
        // contended either, or a flood's own answers would slow the flood
        // down with nobody to protect. Another uid's light line beside a
        // backlog does.
        if uid != 0 {
            guard credit(of: uid, now: now) > 0 else { return false }
            if now < anyBackloggedUntil { contendedUntil = now + memory }
        }
        return true
    }

    /// A line of `uid` handled at once ran from `start` to `end`: its cost
    /// comes off the uid's credit.
    mutating func handled(uid: UInt32, from start: NIODeadline, to end: NIODeadline) {
        guard uid != 0, let slot = credits.index(forKey: uid) else { return }
        credits.values[slot].nanoseconds -= max(end - start, lineCharge).nanoseconds
    }

    /// The uid's credit now: what it had, plus half the time since, at most `burst`.
    private mutating func credit(of uid: UInt32, now: NIODeadline) -> Int64 {
        guard let slot = credits.index(forKey: uid) else {
            if credits.count > rememberedLimit { forgetFullCredits(now: now) }
            credits[uid] = Credit(nanoseconds: burst.nanoseconds, at: now)
            return burst.nanoseconds
        }
        let credit = credits.values[slot]
        let refilled = min(burst.nanoseconds, credit.nanoseconds + max(0, (now - credit.at).nanoseconds / 2))
        credits.values[slot] = Credit(nanoseconds: refilled, at: now)
        return refilled
    }

    /// Uids whose credit is full again need no memory: a new entry starts full.
    private mutating func forgetFullCredits(now: NIODeadline) {
        let burst = self.burst.nanoseconds
        credits = credits.filter { $0.value.nanoseconds + (now - $0.value.at).nanoseconds / 2 < burst }
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

    /// Gives back what a burst of connections left (see ``SparseStorage``).
    mutating func shrinkSparseTables() -> Bool {
        let connections = backloggedUntil.shrinkIfSparse()
        return credits.shrinkIfSparse() || connections
    }

    mutating func forget(_ connection: ConnectionID) {
        backloggedUntil[connection] = nil
    }
}
