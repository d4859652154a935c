import Logging
import MediatorEventLoop
import MediatorProtocol
import MediatorSocket
import MediatorSocketHost
import MediatorStatistics
import MediatorTransport
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Runs the ``Broker`` on one sd-event loop and carries out its effects. The
/// sockets are ``LineServer``'s (recvmsg/sendmsg, so descriptors pass both
/// ways, flushed after the reads that queued the lines); the rest is in
/// parts that own their state: ``DescriptorTable`` (the descriptors in the daemon's
/// hands), ``InboundDispatch`` (fair dispatch of queued lines),
/// ``HostTimers`` (the broker's wake-up, memory trimming),
/// ``AcceptGuard`` (running out of descriptors), ``BootWaiters``.
///
/// `@unchecked Sendable`: every mutable member is touched only on `loop`'s
/// thread; other threads come in through ``run(_:)`` and `loop.submit`.
final class BrokerHost: @unchecked Sendable {
    let loop: SDEventLoop
    let broker: Broker
    let logger: Logger
    var server: LineServer?
    /// The uid of each connection the broker admitted (looked up for every
    /// line read: a key the daemon assigned, hashed cheaply).
    private var admitted: [AssignedIDKey: UInt32] = [:]
    var descriptors = DescriptorTable()
    private(set) var dispatch: InboundDispatch?
    private var timers: HostTimers?
    private var acceptGuard: AcceptGuard?
    /// The storage each line's effects come back in, reused.
    private var spareEffects: [BrokerEffect] = []
    private let allocator = ByteBufferAllocator()
    /// The buffer each line read is copied into for the broker, reused
    /// while nothing else holds it (a queued line or a slice kept past its
    /// line does: then the next line gets storage of its own).
    private var frameBuffer = ByteBuffer()
    /// A buffer grown past this by a long line is not kept.
    private static let keptFrameCapacity = 16 * 1024
    /// Starts and watches component processes.
    var supervisor: ProcessSupervisor?
    /// Their output pipes, and the watchers of those a predecessor image started.
    let processes: ComponentProcesses
    var units: UnitControl?
    let bootWaiters = BootWaiters()
    private(set) var stopping = false
    /// How to re-exec, from ``MediatorServer``; nil: `mediator/reexec` is refused.
    var reexecSettings: ReexecSettings?
    /// The re-exec asked for and not done yet, with who waits for its answer.
    var pendingReexec: PendingReexec?
    /// Where the socket is (for the hand-over): the file bound, if the
    /// daemon bound it, and the path components are told.
    var boundPath: String?
    var advertisedPath = ""
    /// Re-execs since the daemon started.
    var reexecs = 0
    /// Under systemd with `--fd-store`: each admitted connection is kept there too, and each component process.
    var connectionStore: ConnectionStore? {
        didSet { processes.store = connectionStore }
    }
    /// The component processes a predecessor kept in the fd store, by spawn
    /// id (nil: none passed in): a restart's resumption adopts those its
    /// hand-over names, ``endUnclaimedStoredProcesses()`` ends the rest.
    var storedProcesses: [Int: StoredProcess]?
    /// Under systemd (KillMode=process): a stop ends the component
    /// processes itself and waits for them, since systemd leaves them be.
    var endsComponentsAtStop = false
    /// The timer of a stop waiting for component processes to end.
    var componentEndTimer: TimerSource?
    /// The timer of a re-exec asked for (a source lives as long as its object).
    var reexecTimer: TimerSource?
    /// A restart's hand-over through the fd store is under way (a re-exec is refused then).
    var restartHandOverUnderway = false
    /// Its timer while it waits for held calls (as a re-exec waits).
    var restartHandOverTimer: TimerSource?

    init(loop: SDEventLoop, broker: Broker, logger: Logger) {
        self.loop = loop
        self.broker = broker
        self.logger = logger
        processes = ComponentProcesses(loop: loop, logger: logger)
        broker.passesDescriptors = true
        broker.backlog = { [unowned self] connection in server?.queuedBytes(connection) ?? 0 }
        broker.descriptorsHeld = { [unowned self] uid in descriptors.countByUID[uid] ?? 0 }
        broker.descriptorCounts = { [unowned self] in
            DescriptorCounts(
                received: descriptors.received, released: descriptors.released, inFlight: descriptors.total,
                inFlightByUID: descriptors.countByUID)
        }
    }

    /// Starts serving `listener` (listening already); on the loop's thread.
    func start(listener: UnixListener, listenerDescriptor: Int32) throws {
        try prepareParts(listenerDescriptor: listenerDescriptor)
        server = try LineServer(
            loop: loop, listener: listener, maxLineBytes: broker.configuration.maxFrameBytes, handlers: lineHandlers())
    }

    /// The parts around the sockets, before a ``LineServer`` is made or adopted.
    func prepareParts(listenerDescriptor: Int32) throws {
        TimerSlack.setMinimalForCurrentThread()
        acceptGuard = AcceptGuard(listener: listenerDescriptor, logger: logger) { [unowned self] in admitted.count }
        dispatch = try InboundDispatch(loop: loop) { [unowned self] connection, line in handle(line, from: connection) } setReading: {
            [unowned self] connection, enabled in server?.setReading(connection, enabled)
        }
        timers = try HostTimers(loop: loop) { [unowned self] in
            apply(broker.expireCalls(now: .now()))
        } trim: { [unowned self] in
            trimMemory()
        }
    }

    /// What the server tells the host, for a server made or adopted.
    func lineHandlers() -> LineServer.Handlers {
        LineServer.Handlers(
            accepted: { [unowned self] connection, socket in accepted(connection, socket) },
            acceptFailed: { [unowned self] code in acceptGuard?.failed(errno: code) },
            declaredDescriptors: { line in DeclaredDescriptors.count(in: line) },
            line: { [unowned self] connection, bytes, passed in received(bytes, passed, from: connection) },
            descriptorMismatch: { [unowned self] connection, bytes, claim in mismatched(bytes, claim, from: connection) },
            tooLarge: { [unowned self] connection in
                guard let uid = admitted[AssignedIDKey(connection)] else { return }
                dispatch?.received(.tooLarge, descriptors: nil, from: connection, uid: uid)
            },
            closed: { [unowned self] connection in closed(connection) },
            backlogChanged: { [unowned self] connection, bytes in backlogChanged(connection, bytes) })
    }

    /// Takes the connections the broker knows from a restored snapshot as
    /// admitted (their uids from their credentials).
    func admitRestoredPeers() {
        for (connection, peer) in broker.peers { admitted[AssignedIDKey(connection)] = peer.credentials.uid }
        timers?.connectionOpened(load: admitted.count)
    }

    /// Runs one of the broker's inputs on the loop and carries out its
    /// effects; from any thread.
    func run(_ input: @escaping @Sendable (Broker, NIODeadline) -> [BrokerEffect]) {
        try? loop.execute { [self] in apply(input(broker, .now())) }
    }

    var connectionCount: Int { admitted.count }

    // MARK: - Connections

    private func accepted(_ connection: ConnectionID, _ socket: UnixStreamSocket) -> Bool {
        acceptGuard?.accepted()
        guard let raw = socket.descriptor.rawValue else { return false }
        let credentials = PeerCredentialsReader.read(socket: raw)
        var refusal: MediatorError?
        if stopping {
            refusal = MediatorError(.componentUnavailable, "mediatord is stopping")
        } else if admitted.count >= broker.configuration.maxConnections {
            logger.warning("connection refused: limit reached", metadata: ["pid": "\(credentials.pid)", "uid": "\(credentials.uid)"])
            refusal = MediatorError(
                .overloaded, "mediatord has reached its limit of \(broker.configuration.maxConnections) connections")
        } else {
            refusal = broker.connect(connection, credentials: credentials)
        }
        if let refusal {
            // One line saying why, then the close.
            server?.send(connection, line: Array(OutboundMessage.error(id: nil, refusal).dropLast()))
            server?.close(connection)
            return true
        }
        admitted[AssignedIDKey(connection)] = credentials.uid
        timers?.connectionOpened(load: admitted.count)
        connectionStore?.store(raw, ConnectionStore.name(connection))
        return true
    }

    /// After a crash: the connections the predecessor kept in the fd store,
    /// by their stored names. Each is admitted as at its accept (its
    /// credentials read again), adopted with nothing read or queued, and
    /// told `mediator.reregister`: this daemon knows none of their
    /// registrations, subscriptions or calls.
    func adoptStoredConnections(_ stored: [(name: String, fd: Int32)]) {
        var sockets: [(id: ConnectionID, socket: OwnedDescriptor)] = []
        for (name, fd) in stored {
            guard let connection = ConnectionStore.connection(named: name), admitted[AssignedIDKey(connection)] == nil else {
                logger.warning("dropping a descriptor of the fd store that is no connection", metadata: ["name": "\(name)"])
                connectionStore?.remove(name)
                close(fd)
                continue
            }
            let credentials = PeerCredentialsReader.read(socket: fd)
            if broker.connect(connection, credentials: credentials) != nil {
                connectionStore?.remove(name)
                close(fd)
                continue
            }
            admitted[AssignedIDKey(connection)] = credentials.uid
            sockets.append((connection, OwnedDescriptor(taking: fd)))
        }
        timers?.connectionOpened(load: admitted.count)
        server?.adopt(sockets: sockets)
        apply(broker.announceReregister(reason: Broker.crashReason, now: .now()))
        logger.notice("connections kept in the fd store adopted; every peer is told to register again", metadata: ["connections": "\(sockets.count)"])
    }

    private func received(_ bytes: UnsafeRawBufferPointer, _ passed: [OwnedDescriptor], from connection: ConnectionID) {
        guard let uid = admitted[AssignedIDKey(connection)] else {
            for descriptor in passed { try? descriptor.close() }
            return
        }
        frameBuffer.clear()
        // One copy; writeBytes goes through NIO's generic, checked path.
        frameBuffer.writeWithUnsafeMutableBytes(minimumWritableBytes: bytes.count) { space in
            space.copyMemory(from: bytes)
            return bytes.count
        }
        dispatch?.received(.frame(frameBuffer), descriptors: descriptors.admit(passed, uid: uid), from: connection, uid: uid)
        if frameBuffer.capacity > Self.keptFrameCapacity { frameBuffer = ByteBuffer() }
    }

    private func mismatched(_ bytes: [UInt8], _ claim: DescriptorClaim, from connection: ConnectionID) {
        guard admitted[AssignedIDKey(connection)] != nil else { return }
        var frame = allocator.buffer(capacity: bytes.count)
        frame.writeBytes(bytes)
        apply(broker.refuseMismatchedDescriptors(frame, from: connection, problem: "\(claim)", now: .now()))
    }

    /// Has the broker handle one line and carries out its effects, in
    /// storage reused from line to line.
    private func handle(_ line: QueuedLine, from connection: ConnectionID) {
        broker.handle(line.line, from: connection, descriptors: line.descriptors, now: .now())
        var effects = broker.takeEffects(reusing: &spareEffects)
        apply(taking: &effects)
        spareEffects = effects
    }

    private func closed(_ connection: ConnectionID) {
        descriptors.connectionClosed(connection)
        guard admitted.removeValue(forKey: AssignedIDKey(connection)) != nil else { return }
        connectionStore?.remove(ConnectionStore.name(connection))
        // Lines that arrived before the close still count (a oneway call, a publish).
        for line in dispatch?.forget(connection) ?? [] {
            apply(broker.receive(line.line, from: connection, descriptors: line.descriptors, now: .now()))
        }
        apply(broker.disconnect(connection, now: .now()))
    }

    /// What `connection`'s socket has not taken changed (after a flush).
    private func backlogChanged(_ connection: ConnectionID, _ bytes: Int) {
        if descriptors.isQueuingAny, let server {
            descriptors.written(toward: connection, stillQueued: server.queuedDescriptors(connection))
        }
        guard let uid = admitted[AssignedIDKey(connection)] else { return }
        if bytes > broker.configuration.maxOutboundBytes {
            outboundLimitReached(connection, uid: uid)
            return
        }
        // Only the quota on queued bytes uses the figure, and it never counts uid 0.
        if uid != 0 { apply(broker.queued(connection, bytes: bytes)) }
    }

    /// A peer that stopped reading: its queue passed the limit.
    private func outboundLimitReached(_ connection: ConnectionID, uid: UInt32) {
        broker.statistics.daemon.backlogDisconnects += 1
        var metadata: Logger.Metadata = [
            "connection": "\(connection)", "limit_bytes": "\(broker.configuration.maxOutboundBytes)", "uid": "\(uid)",
        ]
        if let credentials = broker.peers[connection]?.credentials {
            metadata["pid"] = "\(credentials.pid)"
            metadata["exe"] = "\(credentials.executable ?? "unknown")"
        }
        logger.warning("disconnecting a peer that does not read its messages", metadata: metadata)
        server?.abort(connection)
    }

    /// After a burst (4,000 connections, 100,000 calls) an idle daemon kept
    /// its high-water RSS: dictionaries never shrink, and glibc keeps freed
    /// pages. Both are given back here, off the routing path.
    private func trimMemory() {
        var shrank = broker.shrinkSparseTables()
        shrank = admitted.shrinkIfSparse() || shrank
        shrank = (dispatch?.shrinkSparseTables() ?? false) || shrank
        guard let timers, timers.shouldTrim(shrank: shrank, load: admitted.count + broker.inFlight.count) else { return }
        let before = ProcessMemory.residentBytes()
        ProcessMemory.trimMalloc()
        logger.debug(
            "memory given back after a burst",
            metadata: ["rss_before": "\(before ?? 0)", "rss_after": "\(ProcessMemory.residentBytes() ?? 0)"])
    }

    // MARK: - Effects

    func apply(_ effects: [BrokerEffect]) {
        for effect in effects { apply(effect) }
    }

    /// Carries out `effects` and leaves the array empty, its storage kept:
    /// each effect is moved out of it, not copied.
    private func apply(taking effects: inout [BrokerEffect]) {
        effects.reverse()
        while let effect = effects.popLast() { apply(effect) }
    }

    private func apply(_ effect: BrokerEffect) {
        switch effect {
        case .send(let connection, let buffer):
            guard let server else { return }
            buffer.withUnsafeReadableBytes { _ = server.send(connection, lineWithLF: $0) }
            // Copied into the connection's queue: its storage can carry the next line.
            broker.recycleLine(buffer)
        case .sendWithDescriptors(let connection, let buffer, let passed):
            guard let taken = descriptors.take(passed) else { return }
            let sent = server.map { server in
                buffer.withUnsafeReadableBytes { server.send(connection, lineWithLF: $0, descriptors: taken) }
            }
            if sent == true {
                descriptors.queued(passed, toward: connection)
            } else {
                // Closed by the server: the connection is gone.
                descriptors.dropped(passed)
            }
        case .releaseDescriptors(let passed):
            descriptors.release(passed)
        case .close(let connection):
            server?.close(connection)
        case .spawn(let order):
            // Stopping: a pool member's restart would outlive the daemon.
            guard let supervisor, !stopping else { return }
            let spawnID = order.spawnID
            supervisor.spawn(
                order, output: processes.outputPipes(spawnID: spawnID, target: order.target),
                started: { pid in
                    self.run { broker, now in
                        self.processes.started(spawnID: spawnID, pid: pid)
                        return broker.processStarted(spawnID: spawnID, pid: pid, now: now)
                    }
                },
                ended: { end in
                    self.run { broker, now in
                        self.processes.ended(spawnID: spawnID)
                        return broker.processExited(spawnID: spawnID, end: end, now: now)
                    }
                })
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
            bootWaiters.finish()
        case .adoptStoredProcess(let spawnID, let pid, let target):
            adoptStoredProcess(spawnID: spawnID, pid: pid, target: target)
        case .endStoredProcesses(let spawnIDs):
            endStoredProcesses(spawnIDs)
        case .reexec(let connection, let idBytes):
            requestReexec(HostHandOverState.Requester(
                connection: connection, idBytes: idBytes.map { Array($0.readableBytesView) }))
        case .blockEventLoop:
            while true { Glibc.sleep(3600) }
        case .wakeUp(let deadline):
            timers?.wakeUp(at: deadline)
        }
    }

    private var heartbeat: TimerSource?

    /// Calls `beat` every `interval` from the loop (the systemd watchdog).
    func startHeartbeat(every interval: Duration, _ beat: @escaping @Sendable () -> Void) throws {
        beat()
        heartbeat = try loop.addRepeatingTimer(every: interval) { _, _ in beat() }
    }

    // MARK: - Stopping

    /// Graceful stop: no new connections; calls in flight get the grace
    /// period, then the rest are answered, every peer gets
    /// `mediator.restarting`, and every connection is closed.
    /// On the loop's thread; `done` runs there once everything is closed.
    func stop(grace: Duration, done: @escaping () -> Void) {
        stopping = true
        timers?.stopTrimming()
        bootWaiters.fail()
        let deadline = NIODeadline.now() + .nanoseconds(Int64(grace.components.seconds) * 1_000_000_000 + grace.components.attoseconds / 1_000_000_000)
        finishStop(deadline: deadline, done: done)
    }

    /// The timer of a stop in progress (a source lives as long as its object).
    private var stopTimer: TimerSource?

    private func finishStop(deadline: NIODeadline, done: @escaping () -> Void) {
        guard broker.inFlight.count == 0 || NIODeadline.now() >= deadline else {
            stopTimer = try? loop.addTimer(after: .milliseconds(10)) { [self] _, _ in finishStop(deadline: deadline, done: done) }
            return
        }
        apply(broker.answerAllPending(MediatorError(.componentUnavailable, "mediatord is stopping")))
        // Components this daemon started go with it; ones started elsewhere reconnect later.
        apply(broker.terminateStartedComponents())
        // Last before the close: libraries then reconnect at once rather than back off.
        apply(broker.announceRestart())
        for key in Array(admitted.keys) {
            let connection = ConnectionID(key.value)
            // A stop: the store must not keep the connection for a next start.
            connectionStore?.remove(ConnectionStore.name(connection))
            server?.close(connection)
        }
        // The answers leave with the flush at the end of this iteration; the
        // sockets close after it, then the rest goes.
        stopTimer = try? loop.addTimer(after: .milliseconds(1)) { [self] _, _ in
            stopTimer = nil
            guard endsComponentsAtStop else { return finishClosing(done) }
            endComponents(then: { [self] in finishClosing(done) })
        }
    }

    private func finishClosing(_ done: @escaping () -> Void) {
        heartbeat?.cancel()
        heartbeat = nil
        server?.shutdown()
        server = nil
        dispatch = nil
        timers = nil
        descriptors.releaseAll()
        done()
    }
}
