import Glibc
import MediatorEventLoop
import Testing

@Suite("sd-event: signals", .timeLimit(.minutes(1)))
struct SignalSourceTests {
    @Test func aBlockedSignalSentToTheLoopThreadRunsTheHandler() throws {
        let loop = try SDEventLoop()
        // Only this thread blocks SIGUSR2 and only this thread is sent it, so
        // no other thread of the test process can take it.
        var blocked = sigset_t()
        var previous = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGUSR2)
        #expect(pthread_sigmask(SIG_BLOCK, &blocked, &previous) == 0)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }

        var received: [ReceivedSignal] = []
        let source = try loop.addSignal(SIGUSR2) { _, signal in received.append(signal) }
        #expect(source.signal == SIGUSR2)
        try loop.dispatchReady()
        #expect(received.isEmpty)

        #expect(pthread_kill(pthread_self(), SIGUSR2) == 0)
        #expect(try loop.run(until: { !received.isEmpty }))
        #expect(received.first?.signal == SIGUSR2)
        #expect(received.first?.senderPID == UInt32(getpid()))
        source.cancel()
        #expect(loop.census.live == 0)
    }

    @Test func anUnblockedSignalIsRefused() throws {
        let loop = try SDEventLoop()
        var unblocked = sigset_t()
        var previous = sigset_t()
        sigemptyset(&unblocked)
        sigaddset(&unblocked, SIGUSR1)
        #expect(pthread_sigmask(SIG_UNBLOCK, &unblocked, &previous) == 0)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }

        #expect(throws: SDEventError("sd_event_add_signal", errno: EBUSY)) {
            try loop.addSignal(SIGUSR1) { _, _ in }
        }
        #expect(loop.census.live == 0)
    }
}
