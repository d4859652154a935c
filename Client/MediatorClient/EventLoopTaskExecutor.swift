/// A `TaskExecutor` that runs jobs on one connection's loop
/// (``ConnectionLoop``): the thread that does the connection's I/O.
///
/// Why: a task on Swift's global executor that makes a call hands its frame
/// to the connection's thread (one thread wake-up) and is resumed from it when the
/// answer comes (another). Each wake-up costs several microseconds, more
/// than the daemon's whole routing of a call. A task that prefers this
/// executor writes and is resumed on the loop's own thread: no hand-off.
/// The price: everything that runs here shares that one thread with the
/// connection's I/O, so it must not block (README.md, "The Swift library, untyped").
///
/// Jobs enqueued on the loop itself (the common case: a read resumes the
/// tasks whose answers it carried) are collected and run by one loop task
/// per batch, instead of one loop task each (a closure and the loop's
/// task lock per job). Each batch runs the jobs it started with; jobs they
/// enqueue go to the next batch, so I/O is never starved.
///
/// While the connection's inbound handler reads (``beginReading()``), jobs
/// are only collected: the handler runs them when the read is done
/// (``endReading()``), without a loop task at all. That is the common case
/// of a call: the read that carries its answer resumes the caller.
@available(macOS 15.0, *)
final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `eventLoop` is immutable; `batch`, `drainScheduled` and
    // `reading` are touched only on `eventLoop` (checked by `inEventLoop`
    // first, or called by the handler).
    // Exclusivity unchecked at run time for the same reason: one thread,
    // accesses that never overlap, and a check of some 100 instructions
    // each, several per call.
    let eventLoop: ConnectionLoop
    @exclusivity(unchecked) private var batch: [UnownedJob] = []
    @exclusivity(unchecked) private var drainScheduled = false
    @exclusivity(unchecked) private var reading = false

    init(_ eventLoop: ConnectionLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        guard eventLoop.inEventLoop else {
            eventLoop.execute { self.run(job) }
            return
        }
        batch.append(job)
        if !drainScheduled && !reading {
            drainScheduled = true
            eventLoop.execute { self.drain() }
        }
    }

    /// The connection's handler starts a read: jobs enqueued until
    /// ``endReading()`` wait for it. On the loop.
    func beginReading() {
        reading = true
    }

    /// The read is done: runs the jobs it collected, unless a drain is
    /// already scheduled (that one runs them). On the loop.
    func endReading() {
        reading = false
        if !drainScheduled && !batch.isEmpty { drain() }
    }

    /// Runs the jobs collected so far. On the loop.
    private func drain() {
        drainScheduled = false
        var jobs: [UnownedJob] = []
        swap(&jobs, &batch)
        for job in jobs { run(job) }
        // Keep the array's storage for the next batch when nothing came in meanwhile.
        if batch.isEmpty {
            jobs.removeAll(keepingCapacity: true)
            batch = jobs
        }
    }

    private func run(_ job: UnownedJob) {
        job.runSynchronously(on: asUnownedTaskExecutor())
    }
}
