import Testing

@testable import MediatorNATSBridge

/// The bridge's round waits on a doorbell instead of looking every few ms.
/// A wait that a ring or a cancel should end has an hour's deadline: if it
/// did not end, the time limit fails the test (no timing is asserted: the
/// pool's threads may be busy with other suites).
@Suite(.timeLimit(.minutes(1))) struct DoorbellTests {
    @Test func aRingWakesTheWaiter() async {
        let bell = Doorbell()
        async let waited: Void = bell.wait(until: .now + .seconds(3600))
        // It may not be waiting yet: a ring before counts too.
        bell.ring()
        await waited
    }

    @Test func aRingWithNobodyWaitingIsKeptForTheNextWait() async {
        let bell = Doorbell()
        bell.ring()
        bell.ring()
        await bell.wait(until: .now + .seconds(3600))
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
        await bell.wait(until: .now + .seconds(3600))
        // Nothing kept now: this wait runs to its deadline.
        let started = ContinuousClock.now
        await bell.wait(until: .now + .milliseconds(50))
        #expect(ContinuousClock.now - started >= .milliseconds(50))
    }

    @Test func cancellationEndsTheWait() async {
        let bell = Doorbell()
        let task = Task { await bell.wait(until: .now + .seconds(3600)) }
        task.cancel()
        await task.value
    }
}
