import Glibc
import MediatorEventLoop
import Testing

@Suite("sd-event: timers", .timeLimit(.minutes(1)))
struct TimerSourceTests {
    /// Finer than the gaps between the deadlines below, so none coalesce.
    let exact = Duration.microseconds(1)

    @Test func timersFireInDeadlineOrderAndNeverEarly() throws {
        let loop = try SDEventLoop()
        let start = MonotonicInstant.now()
        var fired: [Int] = []
        var early: [Int] = []
        var timers: [TimerSource] = []
        for milliseconds in [30, 10, 20] {
            let deadline = start.advanced(by: .milliseconds(milliseconds))
            timers.append(try loop.addTimer(at: deadline, accuracy: exact) { _, set in
                if MonotonicInstant.now() < set { early.append(milliseconds) }
                fired.append(milliseconds)
            })
        }
        #expect(try loop.run(until: { fired.count == 3 }))
        #expect(fired == [10, 20, 30])
        #expect(early.isEmpty)
        #expect(try timers[0].deadline() == start.advanced(by: .milliseconds(30)))
    }

    @Test func aPastDeadlineFiresAtOnce() throws {
        let loop = try SDEventLoop()
        var fired = false
        let timer = try loop.addTimer(at: MonotonicInstant(microseconds: 1)) { _, _ in fired = true }
        #expect(try loop.run(until: { fired }))
        #expect(try timer.enablement() == .off)
    }

    @Test func aFiredTimerRearmsWithoutANewSource() throws {
        let loop = try SDEventLoop()
        var deadlines: [MonotonicInstant] = []
        let timer = try loop.addTimer(after: .milliseconds(1), accuracy: exact) { timer, deadline in
            deadlines.append(deadline)
            // The broker's use: the next wake-up, set from the handler.
            if deadlines.count < 3 { try? timer.rearm(at: deadline.advanced(by: .milliseconds(2))) }
        }
        #expect(try loop.run(until: { deadlines.count == 3 }))
        #expect(deadlines[1] == deadlines[0].advanced(by: .milliseconds(2)))
        #expect(deadlines[2] == deadlines[1].advanced(by: .milliseconds(2)))
        #expect(loop.census.live == 1)
        #expect(try timer.enablement() == .off)

        // And again from outside a handler, after it went off.
        try timer.rearm(after: .milliseconds(1))
        #expect(try loop.run(until: { deadlines.count == 4 }))
        #expect(loop.census.live == 1)
    }

    @Test func aCancelledOrDisarmedTimerDoesNotFire() throws {
        let loop = try SDEventLoop()
        var fired: [String] = []
        let cancelled = try loop.addTimer(after: .milliseconds(2), accuracy: exact) { _, _ in fired.append("cancelled") }
        let disarmed = try loop.addTimer(after: .milliseconds(2), accuracy: exact) { _, _ in fired.append("disarmed") }
        let last = try loop.addTimer(after: .milliseconds(20), accuracy: exact) { _, _ in fired.append("last") }
        cancelled.cancel()
        try disarmed.disarm()
        #expect(try loop.run(until: { !fired.isEmpty }))
        #expect(fired == ["last"])
        #expect(cancelled.isCancelled)
        #expect(throws: SDEventError("sd_event_source", errno: ESTALE)) { try cancelled.rearm(after: .zero) }
        _ = (disarmed, last)
    }

    @Test func aRepeatingTimerKeepsItsPeriodUntilCancelled() throws {
        let loop = try SDEventLoop()
        let interval = Duration.milliseconds(3)
        var deadlines: [MonotonicInstant] = []
        let timer = try loop.addRepeatingTimer(every: interval, accuracy: exact) { timer, deadline in
            deadlines.append(deadline)
            if deadlines.count == 3 { timer.cancel() }
        }
        #expect(try loop.run(until: { deadlines.count == 3 }))
        #expect(timer.isCancelled)
        for (earlier, later) in zip(deadlines, deadlines.dropFirst()) {
            #expect(later.duration(since: earlier) >= interval)
        }
        #expect(loop.census.live == 0)
    }

    @Test func aRepeatingTimerNeedsAPeriod() throws {
        let loop = try SDEventLoop()
        #expect(throws: SDEventError("sd_event_add_time", errno: EINVAL)) {
            try loop.addRepeatingTimer(every: .zero) { _, _ in }
        }
        #expect(loop.census.live == 0)
    }
}
