import NIOCore
import Testing

@testable import MediatorDaemon

/// Which lines are handled as they are read, and how long dispatch slices run,
/// driven with a fake clock.
@Suite("Dispatch dispatch: light peers at once, short slices while they compete with a backlog")
struct FairDispatchTests {
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func at(_ micros: Int64) -> NIODeadline { t0 + .microseconds(micros) }

    /// `handlesAtOnce`, outside `#expect` (which cannot take a mutating call).
    func atOnce(_ dispatch: inout FairDispatch, _ connection: ConnectionID, uid: UInt32, nothingQueued: Bool, now: NIODeadline) -> Bool {
        dispatch.handlesAtOnce(connection, uid: uid, nothingQueued: nothingQueued, now: now)
    }

    /// A line handled at once that took `micros`, charged as the host does.
    func handle(_ dispatch: inout FairDispatch, _ connection: ConnectionID, uid: UInt32, at start: Int64, taking micros: Int64) -> Bool {
        guard dispatch.handlesAtOnce(connection, uid: uid, nothingQueued: true, now: Self.at(start)) else { return false }
        dispatch.handled(uid: uid, from: Self.at(start), to: Self.at(start + micros))
        return true
    }

    @Test("A light connection's quick lines are handled at once, about burst / lineCharge per uid in a burst")
    func lightLinesAtOnceWithinTheBurst() {
        var dispatch = FairDispatch()
        let perBurst = Int(dispatch.burst.nanoseconds / dispatch.lineCharge.nanoseconds)
        // Quick lines read together: each is charged the minimum.
        var lines = 0
        while lines <= perBurst + 1, handle(&dispatch, 1, uid: 1000, at: 0, taking: 0) { lines += 1 }
        #expect(lines == perBurst || lines == perBurst + 1, "\(lines) lines at once")
        // The uid's next line in the same burst queues, even from another connection...
        #expect(!atOnce(&dispatch, 2, uid: 1000, nothingQueued: true, now: Self.at(0)))
        // ...while another uid still has its credit.
        #expect(atOnce(&dispatch, 3, uid: 2000, nothingQueued: true, now: Self.at(0)))
        // Credit comes back with time, at half the rate of the clock.
        #expect(!atOnce(&dispatch, 1, uid: 1000, nothingQueued: true, now: Self.at(1)))
        #expect(atOnce(&dispatch, 1, uid: 1000, nothingQueued: true, now: Self.at(2 * dispatch.lineCharge.nanoseconds / 1000 + 1)))
    }

    /// Issue 10, defect 3: 4,000 tiny events to 500 subscribers in one write
    /// from one uid were all handled at once, because a line longer than the
    /// window started a new window; another uid's ping waited 1.06 s.
    @Test("Costly lines use up the credit: the lines behind them queue however few they are")
    func costlyLinesQueueAfterTheCreditIsSpent() {
        var dispatch = FairDispatch()
        // One event that took 250 µs to fan out, then the next line of the same read.
        #expect(handle(&dispatch, 1, uid: 1000, at: 0, taking: 250))
        #expect(!atOnce(&dispatch, 1, uid: 1000, nothingQueued: true, now: Self.at(250)))
        #expect(!atOnce(&dispatch, 2, uid: 1000, nothingQueued: true, now: Self.at(300)), "from any connection of the uid")
        // Another uid's light line is still handled as it is read.
        #expect(atOnce(&dispatch, 3, uid: 2000, nothingQueued: true, now: Self.at(300)))
        // The debt is paid back at half the clock's rate: 250 - 50 µs of
        // credit take 400 µs of wall time (from the line's start).
        #expect(!atOnce(&dispatch, 1, uid: 1000, nothingQueued: true, now: Self.at(390)))
        #expect(atOnce(&dispatch, 1, uid: 1000, nothingQueued: true, now: Self.at(410)))
        // Sustained: a uid whose every line costs 100 µs gets at most half
        // of the time at once (credit comes back at half the clock's rate).
        var dispatch2 = FairDispatch()
        var atOnceLines = 0
        var clock: Int64 = 0
        while clock < 100_000 {
            if handle(&dispatch2, 1, uid: 1000, at: clock, taking: 100) {
                atOnceLines += 1
                clock += 100
            } else {
                clock += 10
            }
        }
        #expect(atOnceLines * 100 <= 100_000 / 2 + 200, "\(atOnceLines) lines of 100 µs at once in 100 ms")
        #expect(atOnceLines * 100 >= 100_000 / 2 - 1_000, "and no less: credit is not lost")
    }

    @Test("A connection with lines queued, or that had them lately, queues")
    func backloggedConnectionsQueue() {
        var dispatch = FairDispatch()
        #expect(!atOnce(&dispatch, 1, uid: 1000, nothingQueued: false, now: Self.at(0)))
        dispatch.queued(1, now: Self.at(0))
        // Its queue has drained, but it counts as backlogged for 50 ms.
        #expect(!atOnce(&dispatch, 1, uid: 1000, nothingQueued: true, now: Self.at(1_000)))
        #expect(atOnce(&dispatch, 1, uid: 1000, nothingQueued: true, now: Self.at(50_001)))
        // Forgotten when it closes (ids are not reused, but the table must not grow).
        dispatch.queued(2, now: Self.at(60_000))
        dispatch.forget(2)
        #expect(atOnce(&dispatch, 2, uid: 3000, nothingQueued: true, now: Self.at(60_001)))
    }

    @Test("Slices are long for a backlog alone, short while a light peer is active beside one")
    func contention() {
        var dispatch = FairDispatch()
        #expect(dispatch.slice(at: Self.at(0)) == dispatch.soloSlice)
        // A flood alone: its lines queue; no contention.
        dispatch.queued(1, now: Self.at(0))
        #expect(!dispatch.isContended(at: Self.at(1)))
        // A light peer's line beside it makes the daemon contended for 50 ms.
        #expect(atOnce(&dispatch, 2, uid: 2000, nothingQueued: true, now: Self.at(10)))
        #expect(dispatch.isContended(at: Self.at(11)))
        #expect(dispatch.slice(at: Self.at(11)) == dispatch.sharedSlice)
        #expect(!dispatch.isContended(at: Self.at(50_011)))
    }

    @Test("A light peer alone does not make the daemon contended")
    func lightAloneIsNotContention() {
        var dispatch = FairDispatch()
        #expect(atOnce(&dispatch, 2, uid: 2000, nothingQueued: true, now: Self.at(0)))
        #expect(!dispatch.isContended(at: Self.at(1)))
        // Nor does a backlog that ended long ago.
        dispatch.queued(1, now: Self.at(10))
        #expect(atOnce(&dispatch, 2, uid: 2000, nothingQueued: true, now: Self.at(60_000)))
        #expect(!dispatch.isContended(at: Self.at(60_001)))
    }

    @Test("uid 0 is exempt: no cap on its lines, and they do not make the daemon contended")
    func rootIsExempt() {
        var dispatch = FairDispatch()
        dispatch.queued(1, now: Self.at(0))
        for i in 0..<100 {
            #expect(handle(&dispatch, 2, uid: 0, at: Int64(1 + i), taking: 250))
        }
        #expect(!dispatch.isContended(at: Self.at(100)))
        // A root connection that did queue is backlogged like any other.
        dispatch.queued(3, now: Self.at(100))
        #expect(!atOnce(&dispatch, 3, uid: 0, nothingQueued: true, now: Self.at(101)))
    }

    @Test("The memory of backlogged connections is pruned past its limit")
    func pruning() {
        var dispatch = FairDispatch()
        dispatch.rememberedLimit = 3
        for connection in 1...4 { dispatch.queued(connection, now: Self.at(0)) }
        // All expired by now; the next queueing prunes them, so connection 1 is light again.
        dispatch.queued(5, now: Self.at(60_000))
        #expect(atOnce(&dispatch, 1, uid: 1000, nothingQueued: true, now: Self.at(60_001)))
    }
}
