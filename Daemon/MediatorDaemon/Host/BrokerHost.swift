import Logging
import MediatorProtocol
import MediatorTransport
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Runs the ``Broker`` on one event loop and carries out its effects: writes
/// to connections (flushed once per loop iteration's reads), closes, and the timeout
/// wake-up.
///
/// `@unchecked Sendable`: every mutable member is touched only on
/// `eventLoop`, which each entry point asserts.
final class BrokerHost: @unchecked Sendable {
    let eventLoop: any EventLoop
    let broker: Broker
    let logger: Logger
    /// Each open connection's channel; the context of its handler, which
    /// writes and flushes go through (straight to the pipeline's head: a
    /// channel's own write starts at the tail); and its options, kept so
    /// that the backlog read after every flush does not box them anew.
    /// A class: looking one up costs one retain, not one per member.
    private final class Open {
        let context: ChannelHandlerContext
        let channel: any Channel
        let options: (any NIOSynchronousChannelOptions)?
        /// Whether its backlog is read after each flush: only the quota on
        /// queued bytes uses it, and that quota never counts uid 0.
        let measuresBacklog: Bool

        init(_ context: ChannelHandlerContext, uid: UInt32) {
            self.context = context
            self.channel = context.channel
            self.options = context.channel.syncOptions
            self.measuresBacklog = uid != 0
        }
    }
    private var channels: [ConnectionID: Open] = [:]
    /// Connections written to since the last flush, and a spare array to swap with.
    private var dirty: [ConnectionID] = []
    private var flushing: [ConnectionID] = []
    /// When the oldest write not yet flushed was queued; nil when none is.
    private var unflushedSince: NIODeadline?
    /// How long a write may wait for the end of the loop iteration: flushes
    /// are batched across the iteration's reads, but a write does not wait
    /// behind a long round of other peers' reads (a flood's) for more than this.
    static let flushDelay = TimeAmount.microseconds(20)
    /// The storage each line's effects come back in, reused.
    private var spareEffects: [BrokerEffect] = []
    private var wakeUpTask: Scheduled<Void>?
    /// Bytes each connection's socket has not taken, as last told to the
    /// broker; only nonzero entries, re-measured on a timer while any exists.
    private var backlogs: [ConnectionID: Int] = [:]
    private var backlogCheck: Scheduled<Void>?
    /// How often backlogs are re-measured while there are any, so that the
    /// figures fall as peers read.
    static let backlogCheckInterval: TimeAmount = .milliseconds(50)
    private var nextConnectionID: ConnectionID = 1
    /// Why a connection was refused (a per-uid quota), for the one line it gets.
    private var refusals: [ObjectIdentifier: MediatorError] = [:]

    func takeRefusal(for channel: any Channel) -> MediatorError? {
        refusals.removeValue(forKey: ObjectIdentifier(channel))
    }
    private(set) var stopping = false

    /// Lines read and not yet handled, and the dispatch task that handles them.
    private let inbound = InboundQueues()
    private var dispatchScheduled = false
    /// How a dispatch slice yields to reads (see ``LoopWakePipe``); nil falls back to a timer.
    var wakePipe: LoopWakePipe?
    /// Connections not read from until their queue shrinks.
    private var pausedReading: Set<ConnectionID> = []
    static let pauseReadingAt = 256
    static let resumeReadingAt = 64
    /// What is handled at once and how long a dispatch slice runs.
    private var fairDispatch = FairDispatch()
    /// Without a wake-up pipe, a slice yields to reads with this timer.
    static let yieldToReads = TimeAmount.microseconds(2)

    /// Memory a burst left behind is given back every `trimInterval`: the
    /// tables are rebuilt once sparse, and malloc's free pages returned
    /// once the load fell below half its high-water mark.
    private var trimTask: RepeatedTask?
    private var loadHighWater = 0
    static let trimInterval = TimeAmount.seconds(5)

    /// Starts and watches component processes.
    var supervisor: ProcessSupervisor?
    var units: UnitControl?
    /// Whether every at-boot component registered or failed, and who waits for that.
    private var bootFinished = false
    private var bootWaiters: [EventLoopPromise<Void>] = []

    init(eventLoop: any EventLoop, broker: Broker, logger: Logger) {
        self.eventLoop = eventLoop
        self.broker = broker
        self.logger = logger
        eventLoop.execute { TimerSlack.setMinimalForCurrentThread() }
        // Read for the callers of streams only, at each partial: about 2,000 instructions (NIO's option lookup).
        broker.backlog = { [unowned self] connection in
            (try? channels[connection]?.options?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0
        }
    }

    /// Completes once every at-boot component registered or failed.
    func bootComplete() -> EventLoopFuture<Void> {
        eventLoop.preconditionInEventLoop()
        if bootFinished { return eventLoop.makeSucceededVoidFuture() }
        let promise = eventLoop.makePromise(of: Void.self)
        bootWaiters.append(promise)
        return promise.futureResult
    }

    /// Runs one of the broker's inputs on the loop and carries out its effects.
    func run(_ input: @escaping @Sendable (Broker, NIODeadline) -> [BrokerEffect]) {
        eventLoop.execute { [self] in
            apply(input(broker, .now()))
            flush()
        }
    }

    var connectionCount: Int { channels.count }

    /// Admits a new connection, or nil when the connection limit is reached.
    func open(_ context: ChannelHandlerContext, credentials: PeerCredentials) -> ConnectionID? {
        eventLoop.preconditionInEventLoop()
        guard !stopping, channels.count < broker.configuration.maxConnections else { return nil }
        let id = nextConnectionID
        nextConnectionID += 1
        if let refusal = broker.connect(id, credentials: credentials) {
            refusals[ObjectIdentifier(context.channel)] = refusal
            return nil
        }
        channels[id] = Open(context, uid: credentials.uid)
        if channels.count > loadHighWater { loadHighWater = channels.count }
        if trimTask == nil {
            trimTask = eventLoop.scheduleRepeatedTask(initialDelay: Self.trimInterval, delay: Self.trimInterval) { [self] _ in
                trimMemory()
            }
        }
        return id
    }

    /// After a burst (4,000 connections, 100,000 calls) an idle daemon kept
    /// its high-water RSS: dictionaries never shrink, and glibc keeps freed
    /// pages. Both are given back here, off the routing path.
    func trimMemory() {
        eventLoop.preconditionInEventLoop()
        var shrank = broker.shrinkSparseTables()
        shrank = channels.shrinkIfSparse() || shrank
        shrank = backlogs.shrinkIfSparse() || shrank
        shrank = fairDispatch.shrinkSparseTables() || shrank
        let load = channels.count + broker.inFlight.count
        loadHighWater = max(loadHighWater, broker.inFlight.count)
        guard shrank || (loadHighWater >= 256 && load * 2 < loadHighWater) else { return }
        loadHighWater = load
        let before = ProcessMemory.residentBytes()
        ProcessMemory.trimMalloc()
        logger.debug(
            "memory given back after a burst",
            metadata: ["rss_before": "\(before ?? 0)", "rss_after": "\(ProcessMemory.residentBytes() ?? 0)"])
    }

    /// A line read from a peer: handled at once when its connection is
    /// light (``FairDispatch``), otherwise queued for the dispatch task,
    /// which runs once this loop iteration's reads are done.
    func received(_ line: InboundLine, from connection: ConnectionID, uid: UInt32) {
        eventLoop.preconditionInEventLoop()
        let now = NIODeadline.now()
        if fairDispatch.handlesAtOnce(connection, uid: uid, nothingQueued: inbound.waiting(connection) == 0, now: now) {
            handle(line, from: connection, now: now)
            // Charged by the time it took (uid 0 is exempt and not timed).
            if uid != 0 { fairDispatch.handled(uid: uid, from: now, to: .now()) }
            return
        }
        fairDispatch.queued(connection, now: now)
        let waiting = inbound.append(line, from: connection, uid: uid)
        // A peer far ahead of the daemon waits in its socket, not in memory.
        if waiting >= Self.pauseReadingAt, pausedReading.insert(connection).inserted {
            try? channels[connection]?.options?.setOption(ChannelOptions.autoRead, value: false)
        }
        scheduleDispatch()
    }

    /// The wake-up pipe's byte was read: the slice it stood for runs once this round's reads are done.
    func wokenUp() {
        eventLoop.preconditionInEventLoop()
        dispatchScheduled = false
        scheduleDispatch()
    }

    /// Has the broker handle one line and carries out its effects, in
    /// storage reused from line to line.
    private func handle(_ line: InboundLine, from connection: ConnectionID, now: NIODeadline) {
        broker.handle(line, from: connection, now: now)
        var effects = broker.takeEffects(reusing: &spareEffects)
        apply(taking: &effects)
        spareEffects = effects
    }

    private func scheduleDispatch() {
        guard !dispatchScheduled else { return }
        dispatchScheduled = true
        eventLoop.execute { [self] in dispatch() }
    }

    /// Handles queued lines in ``InboundQueues``' fair order for one time
    /// slice and flushes. While a light uid is active beside backlogged ones,
    /// slices are short and the loop yields to reads between them, so a
    /// flood delays the light uid's lines by about a slice, not by its backlog.
    private func dispatch() {
        dispatchScheduled = false
        // What this iteration's reads produced (light peers' answers) leaves
        // now, not after the slice: otherwise it would wait for a flood's turn.
        flush()
        let start = NIODeadline.now()
        let slice = fairDispatch.slice(at: start)
        var now = start
        while let (connection, line, left) = inbound.next() {
            handle(line, from: connection, now: now)
            if left <= Self.resumeReadingAt, pausedReading.remove(connection) != nil {
                try? channels[connection]?.options?.setOption(ChannelOptions.autoRead, value: true)
            }
            now = .now()
            if now - start >= slice { break }
        }
        flush()
        guard !inbound.isEmpty else { return }
        // NIO runs tasks queued by a task in the same tick, before any read:
        // the wake-up pipe (or, without one, a timer) lets this tick end, so
        // other peers' lines are read (and the light ones handled) before
        // the next slice.
        dispatchScheduled = true
        if let wakePipe {
            wakePipe.wake()
        } else {
            eventLoop.scheduleTask(in: Self.yieldToReads) { [self] in dispatch() }
        }
    }

    /// A connection's read cycle ended: its writes wait for the end of the
    /// loop iteration (``LoopTickEnd``) unless the oldest unflushed one has
    /// waited ``flushDelay`` already.
    func readCycleEnded() {
        if let since = unflushedSince, NIODeadline.now() - since >= Self.flushDelay { flush() }
    }

    /// Every connection written to since the last flush gets one: at the
    /// end of each loop iteration (``LoopTickEnd``), and wherever the host
    /// runs outside one (dispatch slices, timers, closes).
    func flush() {
        eventLoop.preconditionInEventLoop()
        guard !dirty.isEmpty else { return }
        unflushedSince = nil
        // The list is swapped with a spare, not copied; a flush within this
        // one (a close's effects) finds no spare and uses a new array.
        var touched = flushing
        flushing = []
        swap(&dirty, &touched)
        for connection in touched {
            guard let open = channels[connection] else { continue }
            open.context.flush()
            measureBacklog(connection, open)
        }
        touched.removeAll(keepingCapacity: true)
        flushing = touched
    }

    /// Tells the broker when what `connection`'s socket has not taken changes.
    /// NIO writes to the socket within `flush()`, so what it still holds
    /// after one is a real backlog; with none anywhere this costs an option read.
    private func measureBacklog(_ connection: ConnectionID, _ open: Open) {
        // Reading the figure costs about 2,000 instructions (NIO's option lookup).
        guard open.measuresBacklog else { return }
        let bytes = (try? open.options?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0
        if bytes == 0 && backlogs.isEmpty { return }
        guard bytes != backlogs[connection, default: 0] else { return }
        backlogs[connection] = bytes == 0 ? nil : bytes
        apply(broker.queued(connection, bytes: bytes))
        scheduleBacklogCheck()
    }

    /// Re-measures one connection now (it became writable again).
    func recheckBacklog(_ connection: ConnectionID) {
        eventLoop.preconditionInEventLoop()
        guard backlogs[connection] != nil, let open = channels[connection] else { return }
        measureBacklog(connection, open)
        flush()
    }

    private func scheduleBacklogCheck() {
        guard backlogCheck == nil, !backlogs.isEmpty else { return }
        backlogCheck = eventLoop.scheduleTask(in: Self.backlogCheckInterval) { [self] in
            backlogCheck = nil
            for connection in Array(backlogs.keys) {
                if let open = channels[connection] { measureBacklog(connection, open) } else { backlogs[connection] = nil }
            }
            flush()
            scheduleBacklogCheck()
        }
    }

    func closed(_ connection: ConnectionID) {
        eventLoop.preconditionInEventLoop()
        guard channels.removeValue(forKey: connection) != nil else { return }
        backlogs[connection] = nil
        fairDispatch.forget(connection)
        // Lines that arrived before the close still count (a oneway call, a publish).
        pausedReading.remove(connection)
        for line in inbound.removeAll(from: connection) {
            apply(broker.receive(line, from: connection, now: .now()))
        }
        apply(broker.disconnect(connection, now: .now()))
        flush()
    }

    func apply(_ effects: [BrokerEffect]) {
        for effect in effects { apply(effect) }
    }

    /// Carries out `effects` and leaves the array empty, its storage kept:
    /// each effect is moved out of it, not copied (a copy is a retain of
    /// its buffer, and the array's release another).
    private func apply(taking effects: inout [BrokerEffect]) {
        effects.reverse()
        while let effect = effects.popLast() { apply(effect) }
    }

    private func apply(_ effect: BrokerEffect) {
        switch effect {
        case .send(let connection, let buffer):
            guard let open = channels[connection] else { return }
            open.context.write(NIOAny(buffer), promise: nil)
            if dirty.isEmpty { unflushedSince = .now() }
            if dirty.last != connection { dirty.append(connection) }
        case .close(let connection):
            channels[connection]?.channel.flush()
            channels[connection]?.channel.close(promise: nil)
        case .spawn(let order):
            guard let supervisor else { return }
            supervisor.spawn(
                order,
                started: { pid in self.run { $0.processStarted(spawnID: order.spawnID, pid: pid, now: $1) } },
                ended: { end in self.run { $0.processExited(spawnID: order.spawnID, end: end, now: $1) } })
        case .signal(let pid, let signal, let group):
            // The group when the daemon made one; the process alone otherwise.
            if !group || kill(-pid, signal) != 0 { kill(pid, signal) }
        case .startUnit(let unit, let target):
            guard let units else {
                apply(broker.unitFailed(target: target, reason: "no systemd to start \(unit) with", now: .now()))
                return
            }
            Task {
                if let failure = await units.start(unit) {
                    self.run { $0.unitFailed(target: target, reason: failure, now: $1) }
                }
            }
        case .stopUnit(let unit):
            if let units { Task { _ = await units.stop(unit) } }
        case .bootComplete:
            bootFinished = true
            for waiter in bootWaiters { waiter.succeed() }
            bootWaiters = []
        case .blockEventLoop:
            while true { Glibc.sleep(3600) }
        case .wakeUp(let deadline):
            wakeUpTask?.cancel()
            wakeUpTask = eventLoop.scheduleTask(deadline: deadline) { [self] in
                wakeUpTask = nil
                apply(broker.expireCalls(now: .now()))
                flush()
            }
        }
    }

    /// A peer that stopped reading: its queue passed the limit.
    func outboundLimitReached(_ connection: ConnectionID) {
        guard let channel = channels[connection]?.channel else { return }
        broker.statistics.daemon.backlogDisconnects += 1
        var metadata: Logger.Metadata = [
            "connection": "\(connection)", "limit_bytes": "\(broker.configuration.maxOutboundBytes)",
        ]
        if let credentials = broker.peers[connection]?.credentials {
            metadata["uid"] = "\(credentials.uid)"
            metadata["pid"] = "\(credentials.pid)"
            metadata["exe"] = "\(credentials.executable ?? "unknown")"
        }
        logger.warning("disconnecting a peer that does not read its messages", metadata: metadata)
        channel.close(promise: nil)
    }

    /// Graceful stop: no new connections; calls in flight get the grace
    /// period, then the rest are answered and every connection is closed.
    func stop(grace: TimeAmount) -> EventLoopFuture<Void> {
        eventLoop.preconditionInEventLoop()
        stopping = true
        trimTask?.cancel()
        trimTask = nil
        for waiter in bootWaiters { waiter.fail(ChannelError.ioOnClosedChannel) }
        bootWaiters = []
        let promise = eventLoop.makePromise(of: Void.self)
        finishStop(deadline: .now() + grace, promise: promise)
        return promise.futureResult
    }

    private func finishStop(deadline: NIODeadline, promise: EventLoopPromise<Void>) {
        guard broker.inFlight.count == 0 || NIODeadline.now() >= deadline else {
            eventLoop.scheduleTask(in: .milliseconds(10)) { self.finishStop(deadline: deadline, promise: promise) }
            return
        }
        apply(broker.answerAllPending(MediatorError(.componentUnavailable, "mediatord is stopping")))
        // Components this daemon started go with it; ones started elsewhere reconnect later.
        apply(broker.terminateStartedComponents())
        flush()
        let closes = channels.values.map { $0.channel.close() }
        EventLoopFuture.andAllComplete(closes, on: eventLoop).cascade(to: promise)
    }
}
