import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MediatorProtocol
import MediatorSocket
import NIOCore
import Synchronization

/// One connection to the daemon: the socket and the thread that does its
/// I/O (``ConnectionLoop``), the outbound queue, the table of calls in
/// flight, the local subscribers, and the dispatch of every inbound frame.
/// ``MediatorClient`` is the public face of it.
///
/// The socket is read with recvmsg and written with sendmsg (MediatorSocket),
/// so that descriptors travel with the frames that declare them (contract
/// section 8); SwiftNIO, which the library used before, reads with read(2)
/// and the kernel drops the descriptors of such a read.
///
/// Threading: inbound frames are handled on the connection's thread, in
/// order. Callers on any task enqueue outbound frames into one queue under a
/// lock; the first frame into an empty queue schedules one flush on the
/// thread, so every frame enqueued until that flush runs goes out in the
/// same sendmsg: pipelined calls are batched without any timer. While the
/// thread reads, nothing is scheduled: it runs the tasks the read resumed
/// and then writes what they and the read queued, in one sendmsg
/// (``endRead()``), so a call answered and the next one sent cost no job.
final class Connection: Sendable {
    /// How long past a call's timeout the client waits before it gives up on
    /// a daemon that stopped answering.
    static let grace: TimeAmount = .seconds(1)
    /// How often the local deadlines are checked.
    static let sweepInterval: TimeAmount = .milliseconds(250)
    /// Bytes queued and not taken by the socket above which a stream's
    /// partials wait (``waitUntilWritable()``), and below which they go on:
    /// SwiftNIO's defaults, which the library had before.
    static let highWatermark = 64 * 1024
    static let lowWatermark = 32 * 1024
    /// Reads from the socket per wake-up before the thread looks at its
    /// other work (jobs, the sweep), so that a flood of input does not
    /// starve them.
    static let readsPerWakeUp = 4

    let socket: UnixStreamSocket
    let loop: ConnectionLoop
    let socketPath: String
    let logger: Logger
    let pending = PendingCalls()
    let subscriptions = Subscriptions()
    let hooks: InboundHooks?
    let maxInboundFrameBytes: Int
    /// Whether this connection says `"fds": true` in `hello`: it sends and
    /// accepts descriptors. Without it, descriptors that arrive are refused.
    let acceptsDescriptors: Bool
    /// Runs tasks on the connection's thread (see ``EventLoopTaskExecutor``).
    let executor: EventLoopTaskExecutor

    private struct Outbox: ~Copyable {
        var queue = OutboundQueue()
        var flushScheduled = false
        /// The socket took no more: the thread writes again once it is writable.
        var waitingForWritable = false
        var closed = false
        /// The thread is reading and flushes when it is done.
        var flushAfterRead = false
        /// A written frame's storage, emptied, for the next frame to be
        /// built in (``frameStorage()``): no allocation per frame.
        var spare: [UInt8] = []
    }

    /// What only the connection's thread touches.
    private final class LoopState: @unchecked Sendable {
        // @unchecked: confined to the connection's thread (runLoop and what it calls).
        // Exclusivity unchecked at run time: one thread, and no access
        // overlaps another (each is one call on `inbound`); the checks
        // cost some 100 instructions per access, several per frame.
        @exclusivity(unchecked) var inbound: InboundFrames
        @exclusivity(unchecked) var running = true
        /// Where each read's control message lands (no allocation per read).
        let controlSpace = ControlSpace()
        /// See ``Connection/lastImmediateHandler``.
        @exclusivity(unchecked) var lastImmediateHandler: (action: String, handler: Component.ImmediateHandler)?
        /// The last request's names, for the next one's (see ``Connection/parsePlainRequest(_:into:params:)``).
        @exclusivity(unchecked) var requestNames = EnvelopeParser.RequestNames()

        init(maxFrameBytes: Int) {
            inbound = InboundFrames(maxLineBytes: maxFrameBytes)
        }
    }

    private struct Lifecycle: Sendable {
        var closedByClient = false
        var closed = false
        /// Why the connection ended when its client did not close it.
        var lossReason: MediatorError?
        /// Tasks in ``waitUntilClosed()``.
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let outbox = Mutex(Outbox())
    private let io: LoopState
    /// Tasks waiting for the socket to take what is queued (``waitUntilWritable()``);
    /// nil once the connection closed.
    private let writableWaiters = NIOLockedValueBox<[CheckedContinuation<Void, Never>]?>([])
    /// Whether a task may wait in ``waitUntilWritable()``: set under the
    /// waiters' lock before it looks at the queue, so that a flush (which
    /// looks at this after the queue shrank) takes that lock only then, not
    /// at every write.
    private let mayHaveWritableWaiters = Atomic<Bool>(false)
    private let lifecycle = NIOLockedValueBox(Lifecycle())
    /// The daemon's frame limit from `hello`, checked before sending.
    /// An atomic, not a lock: it is read for every frame sent.
    private let peerMaxFrameBytes = Atomic<Int>(ProtocolConstants.defaultMaxFrameBytes)
    /// The daemon's `max_fds` from `hello`; 0 until it said one (then no
    /// descriptor is sent).
    private let peerMaxDescriptors = Atomic<Int>(0)
    /// Counts the reads from the socket (each a batch of frames). On the
    /// connection's thread only; atomics so that the class stays plainly Sendable.
    let readBatch = Atomic<Int>(0)
    /// The read batch in which a component last found tracing off, so that
    /// it asks once per batch rather than per request (see ComponentServer).
    let tracingOffInBatch = Atomic<Int>(-1)
    /// The daemon said `mediator.restarting`: after the close, connect again quickly.
    let daemonRestarting = Atomic<Bool>(false)

    private init(
        socket: UnixStreamSocket, loop: ConnectionLoop, socketPath: String, maxInboundFrameBytes: Int,
        acceptsDescriptors: Bool, hooks: InboundHooks?, logger: Logger
    ) {
        self.socket = socket
        self.loop = loop
        self.socketPath = socketPath
        self.maxInboundFrameBytes = maxInboundFrameBytes
        self.acceptsDescriptors = acceptsDescriptors
        self.hooks = hooks
        self.logger = logger
        self.io = LoopState(maxFrameBytes: maxInboundFrameBytes)
        self.executor = EventLoopTaskExecutor(loop)
    }

    // MARK: - Opening and closing

    /// Connects to the socket and starts the connection's thread; any
    /// failure is `unreachable`.
    static func connect(
        socketPath: String, maxFrameBytes: Int, acceptsDescriptors: Bool = false, hooks: InboundHooks?, logger: Logger
    ) async throws(MediatorError) -> Connection {
        let socket: UnixStreamSocket
        do {
            socket = try UnixStreamSocket.connect(path: socketPath)
        } catch {
            throw MediatorError(.unreachable, "cannot connect to \(socketPath): \(describe(error))")
        }
        let connection = Connection(
            socket: socket, loop: try ConnectionLoop(), socketPath: socketPath, maxInboundFrameBytes: maxFrameBytes,
            acceptsDescriptors: acceptsDescriptors, hooks: hooks, logger: logger)
        try connection.loop.start { connection.runLoop() }
        return connection
    }

    /// Closes the connection after flushing what is queued. Every call in
    /// flight fails with `disconnected`.
    func close() {
        lifecycle.withLockedValue { $0.closedByClient = true }
        loop.execute { [self] in
            flush()
            io.running = false
        }
    }

    /// Waits until the connection is closed and every pending call failed.
    func waitUntilClosed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = lifecycle.withLockedValue { state -> Bool in
                if state.closed { return true }
                state.closeWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    var isClosed: Bool { lifecycle.withLockedValue { $0.closed } }

    /// Why the connection ended, once it did, when its client did not close it.
    var lossReason: MediatorError? { lifecycle.withLockedValue { $0.lossReason } }

    /// Whether the socket has taken all but less than ``highWatermark`` bytes.
    private var isWritable: Bool { outbox.withLock { $0.queue.queuedByteCount < Self.highWatermark } }

    /// Returns once less than ``highWatermark`` (64 KiB) of what was queued
    /// is not yet taken by the socket, or the connection closed. A stream's
    /// partials wait here: a component that produces them faster than the
    /// daemon reads them is slowed down instead of growing its own memory.
    func waitUntilWritable() async {
        if isWritable { return }
        await withCheckedContinuation { continuation in
            let now = writableWaiters.withLockedValue { waiters -> Bool in
                mayHaveWritableWaiters.store(true, ordering: .sequentiallyConsistent)
                guard waiters != nil, !isWritable else { return true }
                waiters?.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// The queue went below the low watermark, or the connection closed.
    private func writabilityChanged(closed: Bool = false) {
        let waiters = writableWaiters.withLockedValue { waiters in
            mayHaveWritableWaiters.store(false, ordering: .sequentiallyConsistent)
            defer { waiters = closed ? nil : [] }
            return waiters ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The connection is gone: fails everything that waits on it. Once, on
    /// the connection's thread, when its loop ends.
    private func didClose() {
        let byClient = lifecycle.withLockedValue { state in
            state.closed = true
            return state.closedByClient
        }
        writabilityChanged(closed: true)
        let error = MediatorError.disconnected(
            byClient ? "the connection was closed" : "the connection to \(socketPath) closed")
        // The outbox first: once a caller sees a call fail, sending fails too.
        // A call activated meanwhile whose frame is refused is failed just below.
        // Closing the queue closes the descriptors that were not sent.
        outbox.withLock { box in
            box.closed = true
            box.queue.close()
        }
        for waiter in pending.close(error) { waiter.fail(error) }
        let closeWaiters = lifecycle.withLockedValue { state in
            state.lossReason = byClient ? nil : error
            defer { state.closeWaiters = [] }
            return state.closeWaiters
        }
        // A lost daemon ends each subscription with the reason; a close by the client ends them quietly.
        subscriptions.close(byClient ? nil : error)
        logger.debug("connection closed", metadata: ["socket": "\(socketPath)"])
        hooks?.closed()
        for waiter in closeWaiters { waiter.resume() }
    }

    func setPeerMaxFrameBytes(_ value: Int64?) {
        guard let value, value > 0, let bytes = Int(exactly: value) else { return }
        peerMaxFrameBytes.store(bytes, ordering: .relaxed)
    }

    /// The daemon's `max_fds` (nil: it takes no descriptors).
    func setPeerMaxDescriptors(_ value: Int?) {
        peerMaxDescriptors.store(value ?? 0, ordering: .relaxed)
    }

    /// The most descriptors one message may carry to the daemon; 0 when it
    /// takes none.
    var maxDescriptorsPerMessage: Int { peerMaxDescriptors.load(ordering: .relaxed) }

    // MARK: - The connection's thread

    /// The thread's body: runs the jobs handed to it, waits in poll for the
    /// socket, the wake-up or the next sweep, and ends once the connection
    /// closed (by the client, the daemon, or an error).
    private func runLoop() {
        var nextSweep = NIODeadline.now() + Self.sweepInterval
        guard let socketNumber = socket.descriptor.rawValue, let wakeNumber = loop.wake.descriptor.rawValue else {
            finishClose()
            return
        }
        while io.running {
            let jobs = loop.takeJobs()
            for job in jobs { job() }
            guard io.running else { break }
            let timeout: Int32
            if jobs.isEmpty {
                let nanoseconds = (nextSweep - .now()).nanoseconds
                timeout = Int32(clamping: max(0, (nanoseconds + 999_999) / 1_000_000))
            } else {
                timeout = 0
            }
            let wantsWrite = outbox.withLock { $0.waitingForWritable }
            var entries = (
                pollfd(fd: socketNumber, events: Int16(POLLIN) | (wantsWrite ? Int16(POLLOUT) : 0), revents: 0),
                pollfd(fd: wakeNumber, events: Int16(POLLIN), revents: 0)
            )
            let ready = withUnsafeMutableBytes(of: &entries) { raw in
                poll(raw.baseAddress?.assumingMemoryBound(to: pollfd.self), 2, timeout)
            }
            if ready < 0 && errno != EINTR {
                logger.debug("poll failed: \(String(cString: strerror(errno)))")
                break
            }
            if entries.1.revents != 0 { loop.wake.drain() }
            let events = Int32(entries.0.revents)
            if events & Int32(POLLNVAL) != 0 { break }
            if events & Int32(POLLOUT) != 0 { flush() }
            if events & (Int32(POLLIN) | Int32(POLLHUP) | Int32(POLLERR)) != 0 { readable() }
            if NIODeadline.now() >= nextSweep {
                sweep()
                nextSweep = .now() + Self.sweepInterval
            }
        }
        finishClose()
    }

    /// The socket is readable: reads, hands each frame on, then runs what
    /// the frames resumed and writes what was queued meanwhile.
    private func readable() {
        for _ in 0..<Self.readsPerWakeUp {
            readBatch.wrappingAdd(1, ordering: .relaxed)
            beginRead()
            let received: InboundFrames.Received
            do {
                received = try io.inbound.receive(from: socket, controlSpace: io.controlSpace)
            } catch {
                endRead()
                logger.debug("connection error: \(error)")
                io.running = false
                return
            }
            if case .bytes = received {
                // A struct, not `nextFrame()`'s optional enum (see FrameCut).
                cutting: while true {
                    let cut = io.inbound.nextCut()
                    switch cut.kind {
                    case .line: receive(cut.line)
                    case .tooLarge: receiveTooLarge()
                    case .needMore: break cutting
                    }
                }
            }
            endRead()
            switch received {
            case .bytes: continue
            case .wouldBlock: return
            case .endOfStream:
                io.running = false
                return
            }
        }
    }

    /// ``EnvelopeParser/parsePlainRequest(_:intoFresh:params:names:maxDepth:)``
    /// with the names of this connection's last request: a component's
    /// requests nearly always repeat them. On the connection's thread.
    func parsePlainRequest(_ raw: UnsafeRawBufferPointer, into envelope: inout Envelope, params: inout JSONValue?) -> Bool {
        EnvelopeParser.parsePlainRequest(raw, intoFresh: &envelope, params: &params, names: &io.requestNames)
    }

    /// The last action a single component's server answered at once on
    /// this connection, with its handler, so that the next request for it
    /// skips the lookup by name (a sequential caller repeats one action).
    /// On the connection's thread only, where requests are dispatched:
    /// per connection, so no lock.
    var lastImmediateHandler: (action: String, handler: Component.ImmediateHandler)? {
        get { io.lastImmediateHandler }
        set { io.lastImmediateHandler = newValue }
    }

    /// The descriptors `line` declares (`count`), or why they did not come
    /// with it. Called while the line is handled, before the next one.
    func takeDescriptors(_ count: Int, for line: InboundLine) -> DescriptorClaim {
        // Without descriptors queued (nearly always) there is nothing to claim or close.
        if count == 0 && io.inbound.queuedDescriptorCount == 0 { return .descriptors([]) }
        return io.inbound.takeDescriptors(count, for: line)
    }

    /// The loop ended: closes the socket and what is queued, then fails
    /// what waits.
    private func finishClose() {
        try? socket.close()
        io.inbound.close()
        didClose()
    }

    // MARK: - Sending

    /// Queues one complete frame (ending in LF) and the descriptors it
    /// declares (the queue owns them from now on); false once the
    /// connection closed.
    @discardableResult
    func enqueue(_ frame: [UInt8], descriptors: [OwnedDescriptor] = []) -> Bool {
        let scheduleFlush: Bool? = outbox.withLock { box in
            if box.closed { return nil }
            do {
                try box.queue.enqueue(terminatedLine: frame, descriptors: descriptors)
            } catch {
                return nil  // more than one message carries: the callers check first
            }
            if box.flushScheduled || box.waitingForWritable { return false }
            box.flushScheduled = true
            return !box.flushAfterRead
        }
        guard let scheduleFlush else { return false }
        if scheduleFlush { loop.execute { [self] in flush() } }
        return true
    }

    /// The thread starts reading: frames queued until ``endRead()`` wait
    /// for it, and so do the tasks the read resumes.
    private func beginRead() {
        outbox.withLock { $0.flushAfterRead = true }
        executor.beginReading()
    }

    /// The read is done: runs the tasks it resumed (their next frames join
    /// the queue), then writes everything queued.
    private func endRead() {
        executor.endReading()
        let write = outbox.withLock { box in
            box.flushAfterRead = false
            return box.flushScheduled
        }
        if write { flush() }
    }

    /// Writes what is queued, as far as the socket takes it. On the
    /// connection's thread only.
    private func flush() {
        let (outcome, queued): (Result<WriteOutcome, SocketError>?, Int) = outbox.withLock { box in
            box.flushScheduled = false
            guard !box.queue.isEmpty, !box.closed else { return (nil, 0) }
            let outcome = Result { () throws(SocketError) -> WriteOutcome in
                try box.queue.write(to: socket, spare: &box.spare)
            }
            box.waitingForWritable = (try? outcome.get()) == .wouldBlock
            return (outcome, box.queue.queuedByteCount)
        }
        guard let outcome else { return }
        if case .failure(let error) = outcome {
            // The daemon is gone (EPIPE) or the socket failed: the loop ends
            // and didClose fails the calls.
            logger.debug("write failed: \(error)")
            io.running = false
            return
        }
        if queued < Self.lowWatermark, mayHaveWritableWaiters.load(ordering: .sequentiallyConsistent) { writabilityChanged() }
    }

    /// Storage for the next frame: a written frame's, or none yet.
    func frameStorage() -> [UInt8] {
        outbox.withLock { box in
            var storage: [UInt8] = []
            swap(&storage, &box.spare)
            return storage
        }
    }

    /// Refuses a frame over the daemon's limit before it is sent (the
    /// daemon would answer `frame_too_large` without the id).
    func checkSize(_ frame: [UInt8]) throws(MediatorError) {
        let limit = peerMaxFrameBytes.load(ordering: .relaxed)
        let length = frame.count - 1
        if length > limit {
            throw MediatorError(
                .frameTooLarge, "the message is \(length) bytes, over the daemon's limit of \(limit) bytes"
            ).delivered(.no)
        }
    }

    /// Sends a complete frame, and the descriptors it declares, after
    /// checking its size.
    func sendFrame(_ frame: [UInt8], descriptors: [OwnedDescriptor] = []) throws(MediatorError) {
        try checkSize(frame)
        // Never written: no component got it.
        guard enqueue(frame, descriptors: descriptors) else { throw closedError.delivered(.no) }
    }

    /// A oneway request: no id, no response.
    func sendOneway(_ target: String, _ action: String, params: JSONValue, trace: TraceMembers? = nil) throws(MediatorError) {
        try sendFrame(OutboundMessage.request(
            id: nil, target: target, action: action, params: params,
            traceparent: trace?.traceparent, tracestate: trace?.tracestate))
    }

    /// The caller gave up on `id`: fails its waiter with `cancelled` and
    /// tells the daemon (oneway; the daemon's `cancelled` answer is ignored
    /// as a response to an unknown id).
    func cancelCall(_ id: Int64) {
        guard let waiter = pending.cancel(id) else { return }
        waiter.fail(.callCancelled)
        enqueue(Self.cancelFrame(id))
    }

    static func cancelFrame(_ id: Int64) -> [UInt8] {
        OutboundMessage.request(
            id: nil, target: ProtocolConstants.daemonTarget, action: "cancel", params: ["id": .int(id)])
    }

    var closedError: MediatorError {
        lifecycle.withLockedValue { $0.closedByClient }
            ? .disconnected("the connection was closed") : .disconnected("the connection to \(socketPath) closed")
    }

    /// Gives up on the calls whose local deadline passed. On the connection's thread.
    private func sweep() {
        let expired = pending.expired(now: .now())
        for item in expired {
            let milliseconds = item.bound.nanoseconds / 1_000_000
            logger.debug("no response from the daemon in time", metadata: ["id": "\(item.id)", "ms": "\(milliseconds)"])
            item.waiter.fail(MediatorError(.timeout, "no response from the daemon within \(milliseconds) ms"))
            enqueue(Self.cancelFrame(item.id))
        }
    }

    /// The local wait bound of a call: its timeout (or the daemon's default)
    /// plus ``grace``.
    static func localBound(_ timeoutMs: Int64?) -> TimeAmount {
        .milliseconds(timeoutMs ?? ProtocolConstants.defaultTimeoutMs) + grace
    }

    /// A `timeout_ms` value for a duration: a positive whole number of
    /// milliseconds, rounded up, capped at about 31 years.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let cap: Int64 = 1_000_000_000_000
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 1 }
        if seconds >= cap / 1000 { return cap }
        let perMillisecond: Int64 = 1_000_000_000_000_000
        var milliseconds = seconds * 1000 + attoseconds / perMillisecond
        if attoseconds % perMillisecond > 0 { milliseconds += 1 }
        return max(1, milliseconds)
    }
}
