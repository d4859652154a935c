import CSystemd
import Glibc
import Synchronization

/// An sd-event loop (libsystemd's, the loop of systemd's own daemons), with
/// Swift closures as handlers: I/O readiness (`addIO`), monotonic timers
/// (`addTimer`, `addRepeatingTimer`), deferred calls (`addDefer`, `addPost`),
/// signals (`addSignal`), child processes (`addChild`).
///
/// sd-event is not thread-safe. The loop and its sources are confined to the
/// thread that runs it (`run`, `runOnce`, or the thread of `start`); before
/// the loop first runs, the creating thread may set it up. Any thread may call
/// `execute`, `submit` and `stop`: they queue work for the loop's thread and
/// wake it through an eventfd.
package final class SDEventLoop: @unchecked Sendable {
    /// The sd_event. Touched only on the loop's thread (see above).
    let event: OpaquePointer
    /// The live handler boxes of the sources added by the loop's users.
    package let census = SourceCensus()

    /// The thread that runs the loop (a pthread_t), `starting` while `start`
    /// creates it, 0 before the loop first runs.
    private let owner = Atomic<UInt>(0)
    private static let starting = UInt.max

    private let work = Mutex(QueuedWork())
    private let wakeFD: Int32
    /// Reads the eventfd and runs the queued work; not counted in `census`.
    private var wakeSource: IOSource?

    private struct QueuedWork {
        var jobs: [@Sendable () -> Void] = []
        /// Set when the loop has ended: nothing more is accepted.
        var closed = false
    }

    package init() throws(SDEventError) {
        var event: OpaquePointer?
        try check("sd_event_new", sd_event_new(&event))
        guard let event else { throw SDEventError("sd_event_new", errno: ENOMEM) }
        let wakeFD = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard wakeFD >= 0 else {
            let error = SDEventError("eventfd", errno: errno)
            sd_event_unref(event)
            throw error
        }
        self.event = event
        self.wakeFD = wakeFD
        // Unowned: the loop owns this source and cancels it in deinit.
        wakeSource = try addIO(fd: wakeFD, events: .readable, census: SourceCensus()) { [unowned self] _, _ in
            runQueuedWork()
        }
    }

    deinit {
        wakeSource?.cancel()
        close(wakeFD)
        // Work accepted but never run (the loop never ran): run it now, so
        // that no `submit` waits forever.
        closeAndRunQueuedWork()
        // Sources still held elsewhere keep the sd_event alive until they go.
        sd_event_unref(event)
    }

    // MARK: Running

    /// Runs the loop on the calling thread until `exit` (or `stop`), then
    /// runs the work queued until then and accepts no more. Returns the exit
    /// code. A loop runs once: EBUSY if it runs or ran on another thread.
    @discardableResult
    package func run() throws(SDEventError) -> Int32 {
        try claimForThisThread()
        return try loopUntilExit()
    }

    /// Runs at most one iteration: waits up to TIMEOUT (nil: without limit)
    /// for an event, dispatches what is ready. Returns whether anything was
    /// dispatched. For a caller that drives the loop from its own thread;
    /// after the iteration that exits, the loop is closed as after `run`.
    @discardableResult
    package func runOnce(timeout: Duration?) throws(SDEventError) -> Bool {
        try claimForThisThread()
        let microseconds = timeout.map { $0.microsecondsOrZero } ?? UInt64.max
        let dispatched = sd_event_run(event, microseconds)
        if sd_event_get_state(event) == Int32(SD_EVENT_FINISHED) { closeAndRunQueuedWork() }
        return try check("sd_event_run", dispatched) > 0
    }

    /// Makes the loop end after the current iteration with CODE (>= 0), on
    /// the loop's thread. From another thread, use `stop`.
    package func exit(code: Int32 = 0) throws(SDEventError) {
        assertConfined()
        try check("sd_event_exit", sd_event_exit(event, code))
    }

    /// From any thread: ends the loop after the work queued before this call.
    /// Does nothing when the loop has already ended.
    package func stop() {
        try? execute { [self] in _ = sd_event_exit(event, 0) }
    }

    /// Sends the service manager's watchdog keep-alive (`WATCHDOG=1`) from
    /// the loop itself, at the interval systemd set in `WATCHDOG_USEC` for
    /// this process: a loop that stops dispatching stops feeding the
    /// watchdog. Returns whether the watchdog is on (false when systemd asked
    /// for none).
    @discardableResult
    package func enableWatchdog() throws(SDEventError) -> Bool {
        assertConfined()
        return try check("sd_event_set_watchdog", sd_event_set_watchdog(event, 1)) > 0
    }

    /// The time of the current iteration on CLOCK_MONOTONIC (sd-event reads
    /// the clock once per iteration), or the clock itself outside an iteration.
    package func now() -> MonotonicInstant {
        var microseconds: UInt64 = 0
        guard sd_event_now(event, CLOCK_MONOTONIC, &microseconds) >= 0 else { return .now() }
        return MonotonicInstant(microseconds: microseconds)
    }

    /// Whether the calling thread may use the loop's sources: it runs the
    /// loop, or the loop has not run yet.
    package var isConfinedHere: Bool {
        let thread = owner.load(ordering: .acquiring)
        return thread == 0 || thread == pthread_self()
    }

    func assertConfined() {
        precondition(isConfinedHere, "an SDEventLoop's sources are used on the loop's thread only")
    }

    /// The calling thread runs the loop: it did already, or it is the first.
    private func claimForThisThread() throws(SDEventError) {
        if owner.load(ordering: .acquiring) != pthread_self() { try claim(expecting: 0) }
    }

    private func claim(expecting current: UInt, as thread: UInt = pthread_self()) throws(SDEventError) {
        guard owner.compareExchange(expected: current, desired: thread, ordering: .acquiringAndReleasing).exchanged
        else { throw SDEventError("sd_event_loop", errno: EBUSY) }
    }

    private func loopUntilExit() throws(SDEventError) -> Int32 {
        let code = sd_event_loop(event)
        closeAndRunQueuedWork()
        return try check("sd_event_loop", code)
    }

    // MARK: Work from other threads

    /// From any thread: runs JOB on the loop's thread, after the jobs queued
    /// before it. Throws `SDEventError.loopClosed` once the loop has ended.
    package func execute(_ job: @escaping @Sendable () -> Void) throws(SDEventError) {
        let wasIdle = work.withLock { work -> Bool? in
            guard !work.closed else { return nil }
            work.jobs.append(job)
            return work.jobs.count == 1
        }
        guard let wasIdle else { throw .loopClosed }
        // One wake-up per batch: a non-empty queue has a wake-up pending or
        // is about to be taken whole by the loop.
        if wasIdle { _ = eventfd_write(wakeFD, 1) }
    }

    /// From any task: runs BODY on the loop's thread and returns its result.
    package func submit<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            do {
                try execute { continuation.resume(with: Result { try body() }) }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    private func runQueuedWork() {
        // Read first: a job queued after the read wakes the loop once more.
        var count: eventfd_t = 0
        _ = eventfd_read(wakeFD, &count)
        let jobs = work.withLock { work in
            defer { work.jobs.removeAll(keepingCapacity: true) }
            return work.jobs
        }
        for job in jobs { job() }
    }

    private func closeAndRunQueuedWork() {
        let jobs = work.withLock { work in
            work.closed = true
            defer { work.jobs = [] }
            return work.jobs
        }
        for job in jobs { job() }
    }

    // MARK: A thread of its own

    /// Runs the loop on a new thread; `SDEventLoopThread.stop` ends and joins it.
    package func start() throws(SDEventError) -> SDEventLoopThread {
        // Claimed as `starting` until the thread claims it for itself, so
        // that the starting thread cannot touch the sources meanwhile.
        try claim(expecting: 0, as: Self.starting)
        let outcome = SDEventLoopThread.Outcome()
        do {
            let thread = try SDEventLoopThread.spawn { [self] in
                owner.store(pthread_self(), ordering: .releasing)
                outcome.set(Result { () throws(SDEventError) -> Int32 in try loopUntilExit() })
            }
            return SDEventLoopThread(loop: self, thread: thread, outcome: outcome)
        } catch {
            owner.store(0, ordering: .releasing)
            throw error
        }
    }
}
