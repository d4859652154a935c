import NIOCore

/// A `TaskExecutor` that runs jobs on one NIO event loop: the loop that
/// does a connection's I/O.
///
/// Why: a task on Swift's global executor that makes a call hands its frame
/// to the event loop (one thread wake-up) and is resumed from it when the
/// answer comes (another). Each wake-up costs several microseconds, more
/// than the daemon's whole routing of a call. A task that prefers this
/// executor writes and is resumed on the loop's own thread: no hand-off.
/// The price: everything that runs here shares that one thread with the
/// connection's I/O, so it must not block (README.md, "The Swift library, untyped").
@available(macOS 15.0, *)
final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: immutable; `EventLoop` is Sendable but the protocol
    // existential is not inferred so here.
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
