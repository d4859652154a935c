import NIOCore
import Testing

@testable import MediatorDaemon

/// Which lines are handled as they are read, and how long dispatch slices run,
/// driven with a fake clock.
@Suite("Dispatch policy: light peers at once, short slices while they compete with a backlog")
struct DispatchPolicyTests {
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func at(_ micros: Int64) -> NIODeadline { t0 + .microseconds(micros) }

    /// `handlesAtOnce`, outside `#expect` (which cannot take a mutating call).
    func atOnce(_ policy: inout DispatchPolicy, _ connection: ConnectionID, uid: UInt32, nothingQueued: Bool, now: NIODeadline) -> Bool {
        policy.handlesAtOnce(connection, uid: uid, nothingQueued: nothingQueued, now: now)
    }

    @Test("A light connection's lines are handled at once, a few per uid per window")
    func lightLinesAtOnceWithinTheWindow() {
        var policy = DispatchPolicy()
        for i in 0..<policy.atOncePerWindow {
            #expect(atOnce(&policy, 1, uid: 1000, nothingQueued: true, now: Self.at(Int64(i))))
        }
        // The uid's next line in the same 50 µs queues, even from another connection...
        #expect(!atOnce(&policy, 2, uid: 1000, nothingQueued: true, now: Self.at(10)))
        // ...while another uid still has its turns.
        #expect(atOnce(&policy, 3, uid: 2000, nothingQueued: true, now: Self.at(10)))
        // A new window gives the uid new turns.
        #expect(atOnce(&policy, 1, uid: 1000, nothingQueued: true, now: Self.at(60)))
    }

    @Test("A connection with lines queued, or that had them lately, queues")
    func backloggedConnectionsQueue() {
        var policy = DispatchPolicy()
        #expect(!atOnce(&policy, 1, uid: 1000, nothingQueued: false, now: Self.at(0)))
        policy.queued(1, now: Self.at(0))
        // Its queue has drained, but it counts as backlogged for 50 ms.
        #expect(!atOnce(&policy, 1, uid: 1000, nothingQueued: true, now: Self.at(1_000)))
        #expect(atOnce(&policy, 1, uid: 1000, nothingQueued: true, now: Self.at(50_001)))
        // Forgotten when it closes (ids are not reused, but the table must not grow).
        policy.queued(2, now: Self.at(60_000))
        policy.forget(2)
        #expect(atOnce(&policy, 2, uid: 3000, nothingQueued: true, now: Self.at(60_001)))
    }

    @Test("Slices are long for a backlog alone, short while a light peer is active beside one")
    func contention() {
        var policy = DispatchPolicy()
        #expect(policy.slice(at: Self.at(0)) == policy.soloSlice)
        // A flood alone: its lines queue; no contention.
        policy.queued(1, now: Self.at(0))
        #expect(!policy.isContended(at: Self.at(1)))
        // A light peer's line beside it makes the daemon contended for 50 ms.
        #expect(atOnce(&policy, 2, uid: 2000, nothingQueued: true, now: Self.at(10)))
        #expect(policy.isContended(at: Self.at(11)))
        #expect(policy.slice(at: Self.at(11)) == policy.sharedSlice)
        #expect(!policy.isContended(at: Self.at(50_011)))
    }

    @Test("A light peer alone does not make the daemon contended")
    func lightAloneIsNotContention() {
        var policy = DispatchPolicy()
        #expect(atOnce(&policy, 2, uid: 2000, nothingQueued: true, now: Self.at(0)))
        #expect(!policy.isContended(at: Self.at(1)))
        // Nor does a backlog that ended long ago.
        policy.queued(1, now: Self.at(10))
        #expect(atOnce(&policy, 2, uid: 2000, nothingQueued: true, now: Self.at(60_000)))
        #expect(!policy.isContended(at: Self.at(60_001)))
    }

    @Test("uid 0 is exempt: no cap on its lines, and they do not make the daemon contended")
    func rootIsExempt() {
        var policy = DispatchPolicy()
        policy.queued(1, now: Self.at(0))
        for i in 0..<(policy.atOncePerWindow * 4) {
            #expect(atOnce(&policy, 2, uid: 0, nothingQueued: true, now: Self.at(Int64(1 + i))))
        }
        #expect(!policy.isContended(at: Self.at(100)))
        // A root connection that did queue is backlogged like any other.
        policy.queued(3, now: Self.at(100))
        #expect(!atOnce(&policy, 3, uid: 0, nothingQueued: true, now: Self.at(101)))
    }

    @Test("The memory of backlogged connections is pruned past its limit")
    func pruning() {
        var policy = DispatchPolicy()
        policy.rememberedLimit = 3
        for connection in 1...4 { policy.queued(connection, now: Self.at(0)) }
        // All expired by now; the next queueing prunes them, so connection 1 is light again.
        policy.queued(5, now: Self.at(60_000))
        #expect(atOnce(&policy, 1, uid: 1000, nothingQueued: true, now: Self.at(60_001)))
    }
}
