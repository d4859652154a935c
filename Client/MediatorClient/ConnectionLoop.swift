#if canImport(Glibc)
import Glibc
#endif
import MediatorSocket
import Synchronization

/// The thread that does one connection's I/O, and the queue of work other
/// threads hand it: a `poll(2)` loop over the connection's socket and a
/// socket pair that wakes it.
///
/// Why its own loop, not SwiftNIO's: NIO reads stream sockets with read(2),
/// and the kernel discards the descriptors (SCM_RIGHTS) of a read that is
/// not a recvmsg with a control buffer; nor does NIO let a foreign
/// descriptor join its selector (issue 26). Why poll on a thread of its
/// own rather than sd-event: the library then needs no libsystemd, and a
/// client has one socket to watch, for which poll costs no more than epoll.
///
/// One thread per connection: a process holds a few connections, and each
/// call is written and answered on its connection's thread without a
/// hand-off when the calling task prefers the connection's executor
/// (``EventLoopTaskExecutor``).
///
/// Lifetime: while the connection is open the thread holds it (the
/// connection's `runLoop` is the thread's body). Once it closed, tasks that
/// prefer its executor may still be resumed, so the thread keeps running
/// the jobs it is handed, holding the loop only weakly between them, and
/// ends once the loop is gone.
final class ConnectionLoop: Sendable {
    /// What wakes the thread, shared with the thread, which may
    /// outlive the loop by one poll.
    let wake: Wake

    private struct Queue: ~Copyable {
        var jobs: [@Sendable () -> Void] = []
        /// The thread is (about to be) in poll: a new job must wake it.
        var sleeping = false
    }

    private let queue = Mutex(Queue())
    /// pthread_self() of the loop's thread; 0 until it started.
    private let thread = Atomic<UInt>(0)

    /// The thread ids of the loops running now (``isLoopThread``).
    private static let running = Mutex<Set<UInt>>([])

    /// The socket pair that ends a poll when work arrives from another
    /// thread (not an eventfd or pipe2: Glibc's Swift module exports
    /// neither; a pair is non-blocking and close-on-exec as made).
    final class Wake: Sendable {
        private let readEnd: UnixStreamSocket
        private let writeEnd: UnixStreamSocket
        /// The end the thread polls.
        var descriptor: OwnedDescriptor { readEnd.descriptor }

        init() throws(MediatorError) {
            do {
                (readEnd, writeEnd) = try UnixStreamSocket.pair()
            } catch {
                throw MediatorError(.unreachable, "cannot make the connection's wake-up socket pair: \(error)")
            }
        }

        func signal() {
            guard let raw = writeEnd.descriptor.rawValue else { return }
            var one: UInt8 = 1
            // A full buffer (EAGAIN) already wakes the thread.
            _ = Glibc.write(raw, &one, 1)
        }

        /// Empties the socket after poll saw it readable.
        func drain() {
            guard let raw = descriptor.rawValue else { return }
            var bytes: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            while withUnsafeMutableBytes(of: &bytes, { Glibc.read(raw, $0.baseAddress, $0.count) }) == MemoryLayout.size(ofValue: bytes) {}
        }
    }

    init() throws(MediatorError) {
        wake = try Wake()
    }

    /// Starts the thread; `body` runs on it and returns once the
    /// connection closed. Then the thread serves late jobs until the loop
    /// is gone.
    func start(_ body: @escaping @Sendable () -> Void) throws(MediatorError) {
        try LoopThread(self, body).spawn()
    }

    /// Whether the caller runs on this loop's thread.
    var inEventLoop: Bool {
        thread.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// pthread_self() of the loop's thread; 0 until it started.
    var threadID: UInt { thread.load(ordering: .acquiring) }

    /// Whether the thread `id` still runs a loop (for tests).
    static func isRunning(_ id: UInt) -> Bool {
        running.withLock { $0.contains(id) }
    }

    /// Whether the caller runs on the thread of some connection's loop (for tests).
    static var isLoopThread: Bool {
        let me = UInt(pthread_self())
        return running.withLock { $0.contains(me) }
    }

    /// Runs `job` on the loop's thread, soon; from any thread.
    func execute(_ job: @escaping @Sendable () -> Void) {
        let mustWake = queue.withLock { queue -> Bool in
            queue.jobs.append(job)
            guard queue.sleeping else { return false }
            queue.sleeping = false
            return true
        }
        if mustWake { wake.signal() }
    }

    /// The jobs queued so far (on the loop's thread). With none, the
    /// thread counts as sleeping from now on: the next job wakes it.
    func takeJobs() -> [@Sendable () -> Void] {
        queue.withLock { queue in
            if queue.jobs.isEmpty {
                queue.sleeping = true
                return []
            }
            var jobs: [@Sendable () -> Void] = []
            swap(&jobs, &queue.jobs)
            return jobs
        }
    }

    /// How long a loop with nothing to do waits before it looks whether
    /// its loop is gone, once the connection closed.
    static let lateJobsPollMilliseconds: Int32 = 1000

    /// Registers the loop's thread (on it).
    fileprivate func enter() {
        let me = UInt(pthread_self())
        thread.store(me, ordering: .releasing)
        Self.running.withLock { _ = $0.insert(me) }
    }

    fileprivate static func leave() {
        let me = UInt(pthread_self())
        _ = running.withLock { $0.remove(me) }
    }
}

/// The loop's thread (pthread, so that the library needs nothing of
/// Foundation's threads). It holds the connection (through `body`) until
/// the body returns, and the loop only weakly afterwards, so that both can
/// go once nobody else holds them.
private final class LoopThread: @unchecked Sendable {
    // @unchecked: `body` is set before the thread starts and then touched
    // by that thread alone; `loop` is a weak reference, read by it alone.
    private var body: (@Sendable () -> Void)?
    private weak var loop: ConnectionLoop?
    private let wake: ConnectionLoop.Wake

    init(_ loop: ConnectionLoop, _ body: @escaping @Sendable () -> Void) {
        self.loop = loop
        self.wake = loop.wake
        self.body = body
    }

    func spawn() throws(MediatorError) {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let code = pthread_create(&thread, nil, { context in
            guard let context else { return nil }
            let me = Unmanaged<LoopThread>.fromOpaque(context).takeRetainedValue()
            me.runBody()
            me.serveLateJobs()
            ConnectionLoop.leave()
            return nil
        }, context)
        guard code == 0 else {
            Unmanaged<LoopThread>.fromOpaque(context).release()
            throw MediatorError(.unreachable, "cannot start the connection's thread: \(String(cString: strerror(code)))")
        }
        pthread_detach(thread)
    }

    /// Runs the body once and lets go of it (and of what it holds).
    private func runBody() {
        guard let body else { return }
        self.body = nil
        loop?.enter()
        body()
    }

    /// After the connection closed: runs the jobs still handed to the loop
    /// (tasks that preferred its executor, resumed by the close) until no
    /// one holds the loop any more.
    private func serveLateJobs() {
        while true {
            do {
                guard let loop else { return }
                for job in loop.takeJobs() { job() }
            }
            guard let raw = wake.descriptor.rawValue else { return }
            var entry = pollfd(fd: raw, events: Int16(POLLIN), revents: 0)
            if poll(&entry, 1, ConnectionLoop.lateJobsPollMilliseconds) > 0 { wake.drain() }
        }
    }
}
