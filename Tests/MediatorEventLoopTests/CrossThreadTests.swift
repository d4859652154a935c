import Glibc
import MediatorEventLoop
import Synchronization
import Testing

/// The loop on a thread of its own, reached from Swift concurrency.
@Suite("sd-event: work from other threads", .timeLimit(.minutes(1)))
struct CrossThreadTests {
    @Test func submitRunsOnTheLoopThreadAndWakesAnIdleLoop() async throws {
        let loop = try SDEventLoop()
        let thread = try loop.start()
        // The loop has no source but its wake-up: without one it would sleep forever.
        let started = MonotonicInstant.now()
        let confined = try await loop.submit { loop.isConfinedHere }
        let elapsed = MonotonicInstant.now().duration(since: started)
        #expect(confined)
        #expect(!loop.isConfinedHere)
        // Generous: a wake-up takes microseconds.
        #expect(elapsed < .seconds(5))
        #expect(try thread.stop() == 0)
    }

    @Test func stopFromAnotherThreadJoinsAndClosesTheLoop() async throws {
        let loop = try SDEventLoop()
        let thread = try loop.start()
        let ran = Shared(0)
        for _ in 0..<100 { try loop.execute { ran.value.withLock { $0 += 1 } } }
        #expect(try thread.stop() == 0)
        // Queued before the stop: all ran.
        #expect(ran.value.withLock { $0 } == 100)
        #expect(throws: SDEventError.loopClosed) { try loop.execute {} }
        await #expect(throws: SDEventError.loopClosed) { try await loop.submit { 1 } }
        // Joining again returns at once.
        #expect(try thread.join() == 0)
    }

    @Test func theLoopThreadCanExitWithACode() async throws {
        let loop = try SDEventLoop()
        let thread = try loop.start()
        try await loop.submit { try loop.exit(code: 7) }
        #expect(try thread.join() == 7)
    }

    @Test func jobsFromManyTasksEachRunOnceInTheirTasksOrder() async throws {
        let loop = try SDEventLoop()
        let thread = try loop.start()
        let perProducer = 500
        let producers = 4
        let seen = Shared<[[Int]]>(Array(repeating: [], count: producers))
        await withThrowingTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    for index in 0..<perProducer {
                        try loop.execute { seen.value.withLock { $0[producer].append(index) } }
                    }
                }
            }
        }
        // A job queued after all of them runs after all of them.
        let lists = try await loop.submit { seen.value.withLock { $0 } }
        #expect(lists == Array(repeating: Array(0..<perProducer), count: producers))
        try thread.stop()
    }

    @Test func aSecondRunOrStartIsRefused() throws {
        let loop = try SDEventLoop()
        let thread = try loop.start()
        #expect(throws: SDEventError("sd_event_loop", errno: EBUSY)) { try loop.start() }
        #expect(throws: SDEventError("sd_event_loop", errno: EBUSY)) { try loop.run() }
        try thread.stop()
    }

    @Test func theLoopThreadServesSocketsAddedThroughSubmit() async throws {
        let loop = try SDEventLoop()
        let thread = try loop.start()
        let pair = try SocketPair()
        let echoFD = pair.a
        // The echo source lives on the loop's thread; the test only carries it.
        let echo = try await loop.submit {
            SDEventLoopBound(try loop.addIO(fd: echoFD, events: .readable) { source, _ in
                SocketPair.write(source.fd, SocketPair.read(source.fd))
            }, loop: loop)
        }
        var peer = pollfd(fd: pair.b, events: Int16(POLLIN), revents: 0)
        SocketPair.write(pair.b, Array("hello".utf8))
        #expect(poll(&peer, 1, 10_000) == 1)
        #expect(SocketPair.read(pair.b) == Array("hello".utf8))
        try await loop.submit { echo.value.cancel() }
        #expect(loop.census.live == 0)
        try thread.stop()
    }
}

/// A value that the loop's thread and the test share.
private final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}

/// The loop driven by its caller, one iteration at a time.
@Suite("sd-event: a loop driven by runOnce", .timeLimit(.minutes(1)))
struct DrivenLoopTests {
    @Test func exitingClosesTheLoopAndRunsWhatWasQueued() throws {
        let loop = try SDEventLoop()
        let ran = Shared(0)
        try loop.execute { ran.value.withLock { $0 += 1 } }
        #expect(try loop.run(until: { ran.value.withLock { $0 } == 1 }))
        try loop.exit(code: 0)
        try loop.execute { ran.value.withLock { $0 += 1 } }
        // The exiting iteration: what was queued still runs, then no more.
        try loop.runOnce(timeout: .zero)
        #expect(ran.value.withLock { $0 } == 2)
        #expect(throws: SDEventError.loopClosed) { try loop.execute {} }
    }

    @Test func runAfterRunOnceOnTheSameThreadIsAllowed() throws {
        let loop = try SDEventLoop()
        try loop.runOnce(timeout: .zero)
        let exit = try loop.addDefer { _ in try? loop.exit(code: 4) }
        #expect(try loop.run() == 4)
        _ = exit
    }
}
