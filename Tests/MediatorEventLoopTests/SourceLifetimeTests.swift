import Glibc
import MediatorEventLoop
import Testing

/// Every C source holds one handler box, released once when sd-event frees
/// the source: `census.live` counts them.
@Suite("sd-event: source lifetimes", .timeLimit(.minutes(1)))
struct SourceLifetimeTests {
    @Test func everyBoxIsReleasedOnceItsSourceGoes() throws {
        let loop = try SDEventLoop()
        let pair = try SocketPair()
        var calls = 0
        var io: IOSource? = try loop.addIO(fd: pair.a, events: .writable) { _, _ in calls += 1 }
        var timer: TimerSource? = try loop.addTimer(after: .zero) { _, _ in calls += 1 }
        let repeating = try loop.addRepeatingTimer(every: .seconds(3600)) { _, _ in }
        var deferred: DeferSource? = try loop.addDefer { _ in calls += 1 }
        let post = try loop.addPost { _ in calls += 1 }
        #expect(loop.census.live == 5)
        #expect(try loop.run(until: { calls >= 4 }))

        // Cancelled, then dropped: released once (a second release would crash).
        repeating.cancel()
        post.cancel()
        #expect(loop.census.live == 3)
        // Dropped without cancel: the object's deinit cancels.
        io = nil
        timer = nil
        deferred = nil
        #expect(loop.census.live == 0)
        _ = (io, timer, deferred)
    }

    @Test func aSourceNobodyKeepsIsGoneAtOnce() throws {
        let loop = try SDEventLoop()
        var fired = false
        _ = try loop.addTimer(after: .zero) { _, _ in fired = true }
        #expect(loop.census.live == 0)
        try loop.dispatchReady()
        try loop.dispatchReady()
        #expect(!fired)
    }

    @Test func aHandlerCanCancelItsOwnSource() throws {
        let loop = try SDEventLoop()
        let pair = try SocketPair()
        var calls = 0
        let source = try loop.addIO(fd: pair.a, events: .readable) { source, _ in
            calls += 1
            // Not read: a level-triggered source would fire again.
            source.cancel()
        }
        SocketPair.write(pair.b, [1])
        #expect(try loop.run(until: { calls == 1 }))
        try loop.dispatchReady()
        try loop.dispatchReady()
        #expect(calls == 1)
        #expect(source.isCancelled)
        #expect(loop.census.live == 0)
    }

    @Test func aFailedRegistrationReleasesItsBoxAndSaysWhy() throws {
        let loop = try SDEventLoop()
        #expect(throws: SDEventError("sd_event_add_io", errno: EBADF)) {
            try loop.addIO(fd: -1, events: .readable) { _, _ in }
        }
        #expect(loop.census.live == 0)
    }

    @Test func aDeferredCallRunsOnceAndAPostCallAfterOtherSources() throws {
        let loop = try SDEventLoop()
        var order: [String] = []
        let deferred = try loop.addDefer { _ in order.append("defer") }
        let post = try loop.addPost { _ in order.append("post") }
        let timer = try loop.addTimer(after: .milliseconds(1)) { _, _ in order.append("timer") }
        #expect(try loop.run(until: { order.filter { $0 == "post" }.count == 2 }))
        #expect(order == ["defer", "post", "timer", "post"])

        try deferred.setEnablement(.oneShot)
        #expect(try loop.run(until: { order.last == "post" && order.filter { $0 == "defer" }.count == 2 }))
        _ = (post, timer)
    }

    @Test func sourcesOutliveTheirLoopObjectSafely() throws {
        var loop: SDEventLoop? = try SDEventLoop()
        let census = try #require(loop?.census)
        let timer = try #require(try loop?.addTimer(after: .seconds(3600)) { _, _ in })
        loop = nil
        // The C source keeps the sd_event; cancelling frees both.
        #expect(census.live == 1)
        try timer.rearm(after: .seconds(1))
        timer.cancel()
        #expect(census.live == 0)
    }
}
