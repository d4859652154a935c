import Testing

@testable import MediatorNATSBridge

/// The bridge's round waits on a doorbell instead of looking every few ms.
@Suite struct DoorbellTests {
    @Test func aRingWakesTheWaiter() async {
        let bell = Doorbell()
        let started = ContinuousClock.now
        async let waited: Void = bell.wait(until: .now + .seconds(30))
        // Rung from elsewhere until the wait returns (it may not be waiting yet: a ring before counts too).
        bell.ring()
        await waited
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func aRingWithNobodyWaitingIsKeptForTheNextWait() async {
        let bell = Doorbell()
        bell.ring()
        bell.ring()
        let started = ContinuousClock.now
        await bell.wait(until: .now + .seconds(30))
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func theDeadlineEndsTheWait() async {
        let bell = Doorbell()
        let started = ContinuousClock.now
        await bell.wait(until: .now + .milliseconds(50))
        #expect(ContinuousClock.now - started >= .milliseconds(50))
    }

    @Test func onlyOneKeptRingAndNoneAfterAWait() async {
        let bell = Doorbell()
        bell.ring()
        await bell.wait(until: .now + .seconds(30))
        // Nothing kept now: this wait runs to its deadline.
        let started = ContinuousClock.now
        await bell.wait(until: .now + .milliseconds(50))
        #expect(ContinuousClock.now - started >= .milliseconds(50))
    }

    @Test func cancellationEndsTheWait() async {
        let bell = Doorbell()
        let started = ContinuousClock.now
        let task = Task { await bell.wait(until: .now + .seconds(30)) }
        task.cancel()
        await task.value
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}
