import Glibc
import Synchronization

/// The thread that runs an `SDEventLoop` (from `SDEventLoop.start`).
package final class SDEventLoopThread: Sendable {
    package let loop: SDEventLoop
    private let thread: pthread_t
    private let outcome: Outcome
    private let joined = Mutex(false)

    init(loop: SDEventLoop, thread: pthread_t, outcome: Outcome) {
        self.loop = loop
        self.thread = thread
        self.outcome = outcome
    }

    /// Ends the loop (after the work queued before) and waits for its thread.
    /// Returns the loop's exit code. Not from the loop's own thread.
    @discardableResult
    package func stop() throws(SDEventError) -> Int32 {
        loop.stop()
        return try join()
    }

    /// Waits for the loop's thread to end (after `exit` or `stop`); returns
    /// the loop's exit code. Any number of callers; the thread is joined once.
    @discardableResult
    package func join() throws(SDEventError) -> Int32 {
        precondition(pthread_equal(thread, pthread_self()) == 0, "the loop's thread cannot join itself")
        // The lock is held while joining, so later callers wait for the first.
        let failure = joined.withLock { joined -> Int32 in
            guard !joined else { return 0 }
            joined = true
            return pthread_join(thread, nil)
        }
        if failure != 0 { throw SDEventError("pthread_join", errno: failure) }
        guard let result = outcome.result else { throw SDEventError("sd_event_loop", errno: ESRCH) }
        return try result.get()
    }

    /// What the loop's run returned, set by the thread before it ends.
    final class Outcome: Sendable {
        private let value = Mutex<Result<Int32, SDEventError>?>(nil)

        var result: Result<Int32, SDEventError>? { value.withLock { $0 } }
        func set(_ result: Result<Int32, SDEventError>) { value.withLock { $0 = result } }
    }

    /// Starts a pthread that runs BODY.
    static func spawn(_ body: @escaping @Sendable () -> Void) throws(SDEventError) -> pthread_t {
        let argument = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let failure = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            Unmanaged<Body>.fromOpaque(argument).takeRetainedValue().run()
            return nil
        }, argument)
        guard failure == 0 else {
            Unmanaged<Body>.fromOpaque(argument).release()
            throw SDEventError("pthread_create", errno: failure)
        }
        return thread
    }

    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}
