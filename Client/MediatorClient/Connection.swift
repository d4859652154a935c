import NIOConcurrencyHelpers
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MediatorProtocol
import MediatorTransport
import NIOCore
import NIOPosix
import Synchronization

/// One connection to the daemon: the NIO channel, the outbound queue, the
/// table of calls in flight, the local subscribers, and the dispatch of
/// every inbound frame. ``MediatorClient`` is the public face of it.
///
/// Threading: inbound frames are handled on the channel's event loop, in
/// order. Callers on any task enqueue outbound frames into one buffer under a
/// lock; the first frame into an empty buffer schedules one flush on the
/// event loop, so every frame enqueued until that flush runs goes out in the
/// same write: pipelined calls are batched without any timer. While the
/// inbound handler reads, nothing is scheduled: the handler runs the tasks
/// the read resumed and then writes what they and the read queued, in one
/// write (``endRead(_:)``), so a call answered and the next one sent cost no
/// loop task.
final class Connection: Sendable {
    /// How long past a call's timeout the client waits before it gives up on
    /// a daemon that stopped answering.
    static let grace: TimeAmount = .seconds(1)
    /// How often the local deadlines are checked.
    static let sweepInterval: TimeAmount = .milliseconds(250)

    let channel: any Channel
    let socketPath: String
    let logger: Logger
    let pending = PendingCalls()
    let subscriptions = Subscriptions()
    let hooks: InboundHooks?
    let maxInboundFrameBytes: Int
    /// Runs tasks on the channel's event loop (see ``EventLoopTaskExecutor``).
    let executor: EventLoopTaskExecutor

    private struct Outbox: Sendable {
        var buffer = ByteBuffer()
        var flushScheduled = false
        var closed = false
        /// The inbound handler is reading and flushes when it is done.
        var flushAfterRead = false

        /// What is queued, leaving the buffer empty; nil when nothing is.
        mutating func take() -> ByteBuffer? {
            flushScheduled = false
            guard buffer.readableBytes > 0 else { return nil }
            let bytes = buffer
            buffer = ByteBuffer()
            return bytes
        }
    }

    private struct Lifecycle: Sendable {
        var sweeper: RepeatedTask?
        var closedByClient = false
        var closed = false
        /// Why the connection ended when its client did not close it.
        var lossReason: MediatorError?
    }

    private let outbox = NIOLockedValueBox(Outbox())
    /// Tasks waiting for the socket to take what is queued (``waitUntilWritable()``);
    /// nil once the connection closed.
    private let writableWaiters = NIOLockedValueBox<[CheckedContinuation<Void, Never>]?>([])
    private let lifecycle = NIOLockedValueBox(Lifecycle())
    /// The daemon's frame limit from `hello`, checked before sending.
    /// An atomic, not a lock: it is read for every frame sent.
    private let peerMaxFrameBytes = Atomic<Int>(ProtocolConstants.defaultMaxFrameBytes)
    /// Counts the reads from the socket (each a batch of frames). On the
    /// event loop only; atomics so that the class stays plainly Sendable.
    let readBatch = Atomic<Int>(0)
    /// The read batch in which a component last found tracing off, so that
    /// it asks once per batch rather than per request (see ComponentServer).
    let tracingOffInBatch = Atomic<Int>(-1)

    private init(channel: any Channel, socketPath: String, maxInboundFrameBytes: Int, hooks: InboundHooks?, logger: Logger) {
        self.channel = channel
        self.socketPath = socketPath
        self.maxInboundFrameBytes = maxInboundFrameBytes
        self.hooks = hooks
        self.logger = logger
        self.executor = EventLoopTaskExecutor(channel.eventLoop)
    }

    // MARK: - Opening and closing

    /// Connects to the socket; any failure is `unreachable`.
    static func connect(socketPath: String, maxFrameBytes: Int, hooks: InboundHooks?, logger: Logger)
        async throws(MediatorError) -> Connection
    {
        let made = NIOLockedValueBox<Connection?>(nil)
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let connection = Connection(
                        channel: channel, socketPath: socketPath, maxInboundFrameBytes: maxFrameBytes,
                        hooks: hooks, logger: logger)
                    made.withLockedValue { $0 = connection }
                    try channel.pipeline.syncOperations.addHandler(
                        InboundHandler(connection, maxFrameBytes: maxFrameBytes))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(unixDomainSocketPath: socketPath).get()
        } catch {
            throw MediatorError(.unreachable, "cannot connect to \(socketPath): \(describe(error))")
        }
        guard let connection = made.withLockedValue({ $0 }) else {
            channel.close(promise: nil)
            throw MediatorError(.unreachable, "cannot connect to \(socketPath): the channel was not set up")
        }
        connection.start()
        return connection
    }

    private func start() {
        let sweeper = channel.eventLoop.scheduleRepeatedTask(
            initialDelay: Self.sweepInterval, delay: Self.sweepInterval
        ) { [self] _ in
            sweep()
        }
        let alreadyClosed = lifecycle.withLockedValue { state -> Bool in
            if state.closed { return true }
            state.sweeper = sweeper
            return false
        }
        if alreadyClosed { sweeper.cancel() }
        // A second path to didClose, in case the channel closed before the
        // handler saw it active.
        channel.closeFuture.whenComplete { [self] _ in didClose() }
    }

    /// Closes the connection after flushing what is queued. Every call in
    /// flight fails with `disconnected`.
    func close() {
        lifecycle.withLockedValue { $0.closedByClient = true }
        channel.eventLoop.execute { [self] in
            flush()
            channel.close(promise: nil)
        }
    }

    /// Waits until the connection is closed and every pending call failed.
    func waitUntilClosed() async {
        try? await channel.closeFuture.get()
        didClose()
    }

    var isClosed: Bool { lifecycle.withLockedValue { $0.closed } }

    /// Why the connection ended, once it did, when its client did not close it.
    var lossReason: MediatorError? { lifecycle.withLockedValue { $0.lossReason } }

    /// The connection is gone: fails everything that waits on it. Idempotent.
    /// Returns once NIO holds less than its high watermark (64 KiB) of
    /// writes the socket has not taken, or the connection closed. A stream's
    /// partials wait here: a component that produces them faster than the
    /// daemon reads them is slowed down instead of growing its own memory.
    func waitUntilWritable() async {
        if channel.isWritable { return }
        await withCheckedContinuation { continuation in
            let now = writableWaiters.withLockedValue { waiters -> Bool in
                guard waiters != nil, !channel.isWritable else { return true }
                waiters?.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// The channel's writability changed (on the event loop), or it closed.
    func writabilityChanged(closed: Bool = false) {
        guard closed || channel.isWritable else { return }
        let waiters = writableWaiters.withLockedValue { waiters in
            defer { waiters = closed ? nil : [] }
            return waiters ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    func didClose() {
        let (first, sweeper, byClient) = lifecycle.withLockedValue { state in
            let first = !state.closed
            state.closed = true
            let sweeper = state.sweeper
            state.sweeper = nil
            return (first, sweeper, state.closedByClient)
        }
        guard first else { return }
        sweeper?.cancel()
        writabilityChanged(closed: true)
        let error = MediatorError.disconnected(
            byClient ? "the connection was closed" : "the connection to \(socketPath) closed")
        // The outbox first: once a caller sees a call fail, sending fails too.
        // A call activated meanwhile whose frame is refused is failed just below.
        outbox.withLockedValue { box in
            box.closed = true
            box.buffer = ByteBuffer()
        }
        for waiter in pending.close(error) { waiter.fail(error) }
        lifecycle.withLockedValue { $0.lossReason = byClient ? nil : error }
        // A lost daemon ends each subscription with the reason; a close by the client ends them quietly.
        subscriptions.close(byClient ? nil : error)
        logger.debug("connection closed", metadata: ["socket": "\(socketPath)"])
        hooks?.closed()
    }

    func setPeerMaxFrameBytes(_ value: Int64?) {
        guard let value, value > 0, let bytes = Int(exactly: value) else { return }
        peerMaxFrameBytes.store(bytes, ordering: .relaxed)
    }

    // MARK: - Sending

    /// Queues one complete frame (ending in LF); false once the connection
    /// closed.
    @discardableResult
    func enqueue(_ frame: [UInt8]) -> Bool {
        let allocator = channel.allocator
        let scheduleFlush: Bool? = outbox.withLockedValue { box in
            if box.closed { return nil }
            if box.buffer.capacity == 0 { box.buffer = allocator.buffer(capacity: max(frame.count, 4096)) }
            box.buffer.writeBytes(frame)
            if box.flushScheduled { return false }
            box.flushScheduled = true
            return !box.flushAfterRead
        }
        guard let scheduleFlush else { return false }
        if scheduleFlush { channel.eventLoop.execute { [self] in flush() } }
        return true
    }

    /// The inbound handler starts reading: frames queued until ``endRead(_:)``
    /// wait for it, and so do the tasks the read resumes. On the event loop.
    func beginRead() {
        outbox.withLockedValue { $0.flushAfterRead = true }
        executor.beginReading()
    }

    /// The read is done: runs the tasks it resumed (their next frames join
    /// the outbox), then writes everything queued, through the reading
    /// handler's context: straight to the pipeline's head, as the only
    /// handler is inbound. On the event loop.
    func endRead(_ context: ChannelHandlerContext) {
        executor.endReading()
        let bytes: ByteBuffer? = outbox.withLockedValue { box in
            box.flushAfterRead = false
            return box.flushScheduled ? box.take() : nil
        }
        guard let bytes else { return }
        context.writeAndFlush(NIOAny(bytes), promise: nil)
    }

    /// Writes everything queued in one write. On the event loop only.
    private func flush() {
        let bytes: ByteBuffer? = outbox.withLockedValue { $0.take() }
        guard let bytes else { return }
        // No promise: a failed write closes the channel, and didClose fails
        // the calls; a promise and its callback per write would cost more.
        channel.writeAndFlush(bytes, promise: nil)
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

    /// Sends a complete frame after checking its size.
    func sendFrame(_ frame: [UInt8]) throws(MediatorError) {
        try checkSize(frame)
        // Never written: no component got it.
        guard enqueue(frame) else { throw closedError.delivered(.no) }
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

    private static func cancelFrame(_ id: Int64) -> [UInt8] {
        OutboundMessage.request(
            id: nil, target: ProtocolConstants.daemonTarget, action: "cancel", params: ["id": .int(id)])
    }

    private var closedError: MediatorError {
        lifecycle.withLockedValue { $0.closedByClient }
            ? .disconnected("the connection was closed") : .disconnected("the connection to \(socketPath) closed")
    }

    /// Gives up on the calls whose local deadline passed. On the event loop.
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
