import MediatorEventLoop
import Testing

@Suite("MonotonicInstant")
struct MonotonicInstantTests {
    @Test func durationsAreWholeMicroseconds() {
        let instant = MonotonicInstant(microseconds: 1_000)
        #expect(instant.advanced(by: .milliseconds(2)).microseconds == 3_000)
        #expect(instant.advanced(by: .nanoseconds(1_999)).microseconds == 1_001)
        #expect(instant.advanced(by: .microseconds(-400)).microseconds == 600)
        #expect(MonotonicInstant(microseconds: 3_000).duration(since: instant) == .milliseconds(2))
        #expect(instant.duration(since: MonotonicInstant(microseconds: 3_000)) == .milliseconds(-2))
    }

    @Test func theClocksEndsSaturate() {
        // UInt64.max is sd-event's "never": a deadline stays below it.
        #expect(MonotonicInstant(microseconds: UInt64.max - 10).advanced(by: .seconds(1)).microseconds == UInt64.max - 1)
        #expect(MonotonicInstant(microseconds: 5).advanced(by: .seconds(-1)).microseconds == 0)
        // A duration beyond Int64 microseconds counts as Int64.max of them.
        #expect(MonotonicInstant(microseconds: 0).advanced(by: .seconds(Int64.max)).microseconds == UInt64(Int64.max))
    }

    @Test func nowMovesForward() {
        let first = MonotonicInstant.now()
        let second = MonotonicInstant.now()
        #expect(first.microseconds > 0)
        #expect(second >= first)
    }
}
