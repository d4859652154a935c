import Logging
import MediatorProtocol
import MediatorStatistics
import MediatorTransport
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The broker's whole state and logic: peers, registry, calls in flight,
/// subscriptions. It does no I/O: each input returns the effects to carry
/// out, and time comes in as an argument, so tests drive it without sockets.
///
/// Not thread-safe: its host confines it to one event loop.
public final class Broker {
    struct Peer {
        var credentials: PeerCredentials
        var name: String?
        /// The `caller` member forwarded with this peer's calls, built once.
        var callerMember: ByteBuffer
        var targets: Set<String> = []
        /// The size of each of its registrations' params, for the quota on registered bytes.
        var registeredBytes: [String: Int] = [:]
        var patterns: Set<String> = []
        var consecutiveBadFrames = 0
        /// Bytes queued toward this peer that its socket has not taken, as the host last measured.
        var queuedBytes = 0
    }

    /// Replaced on reload (SIGHUP); read on every use, never cached.
    public internal(set) var configuration: DaemonConfiguration {
        didSet { statistics.slowCallThresholdNanoseconds = configuration.slowCallThresholdNanoseconds }
    }
    public let version: String
    var logger: Logger {
        didSet { logsCalls = logger.logLevel <= .debug }
    }
    /// Whether each routed call is logged (debug): checked without copying the logger on every call.
    private(set) var logsCalls = false
    let writer = FrameWriter()
    var peers: [ConnectionID: Peer] = [:]
    public internal(set) var registry = Registry()
    public internal(set) var pending = PendingCalls()
    var armedWakeUp: NIODeadline?
    var effects: [BrokerEffect] = []
    public var callsRouted: Int { statistics.daemon.callsRouted }
    /// What `mediator/stats` reports (Broker+Statistics.swift); `list`'s calls_served comes from it too.
    var statistics: BrokerStatistics
    /// Call latencies for swift-metrics, when an exporter wants them (nil: nothing recorded).
    var latencyMetrics: CallLatencyMetrics?
    /// Where the statistics' time starts (their uptime); tests set it to their clock's start.
    var statisticsStart = NIODeadline.now()

    // Components started on demand (Broker+Activation.swift).
    var components: [String: ManagedComponent] = [:]
    /// Who may do what; the default until policy files are loaded.
    var policy = Policy.defaultPolicy(daemonUID: UInt32(getuid()))
    /// Connections that monitor traffic, with what they want to see.
    var monitors: [ConnectionID: MonitorFilter] = [:]
    /// Each uid's connections, for the per-uid quotas.
    var connectionsByUID: [UInt32: Set<ConnectionID>] = [:]
    /// Bytes queued toward each uid's connections, only the nonzero sums and
    /// never uid 0, so that routing pays one emptiness check when no one is backlogged.
    var queuedByUID: [UInt32: Int] = [:]
    /// The uids past their queued-bytes quota, with what it cost them (Broker+QueuedBytes.swift).
    var queueQuotaEpisodes: [UInt32: QueueQuotaEpisode] = [:]
    /// Calls waiting for a component to start (and `start`s waiting for it
    /// to register), by caller: they count against the limits and obey the
    /// duplicate-id rule and `cancel` like calls in flight.
    var heldCalls = HeldCallIndex()
    var nextSpawnID = 0
    var bootGroups: [[String]] = []
    var bootWaiting: Set<String> = []
    var bootDone = false
    /// `mediator/start` calls waiting for their component to register.
    var startWaiters: [String: [StartWaiter]] = [:]
    /// Set by `register`, handled right after its answer is queued.
    var pendingRegistration: (target: String, pid: Int32)?
    /// This process: a connection from it is the daemon's own NATS bridge,
    /// the only peer that may register stand-ins for other hosts' targets.
    /// A var so that tests can play the bridge.
    var ownProcessID: Int32 = getpid()

    public init(configuration: DaemonConfiguration, version: String = MediatorVersion.current, logger: Logger) {
        self.configuration = configuration
        self.version = version
        self.logger = logger
        self.logsCalls = logger.logLevel <= .debug
        self.statistics = BrokerStatistics(slowCallThresholdNanoseconds: configuration.slowCallThresholdNanoseconds)
    }

    public var connectionCount: Int { peers.count }

    // MARK: - Inputs

    /// Admits a connection, or says which quota refuses it.
    @discardableResult
    public func connect(_ connection: ConnectionID, credentials: PeerCredentials) -> MediatorError? {
        if let refusal = quotaExceeded(.connections, credentials: credentials) {
            statistics.daemon.connectionsRefused += 1
            return refusal
        }
        statistics.connectionOpened(uid: credentials.uid)
        peers[connection] = Peer(credentials: credentials, callerMember: writer.callerMember(credentials, name: nil))
        connectionsByUID[credentials.uid, default: []].insert(connection)
        logger.info(
            "connection opened",
            metadata: ["connection": "\(connection)", "pid": "\(credentials.pid)", "uid": "\(credentials.uid)"])
        return nil
    }

    public func receive(_ line: InboundLine, from connection: ConnectionID, now: NIODeadline) -> [BrokerEffect] {
        handle(line, from: connection, now: now)
        return takeEffects()
    }

    /// ``receive(_:from:now:)`` leaving the effects in ``effects``, for a
    /// host that takes them with ``takeEffects(reusing:)``.
    func handle(_ line: InboundLine, from connection: ConnectionID, now: NIODeadline) {
        // The peer by position: looking at it copies nothing.
        guard let slot = peers.index(forKey: connection) else { return }
        switch line {
        case .tooLarge:
            badFrame(from: connection, idBytes: nil, MediatorError(.frameTooLarge, "frame longer than \(configuration.maxFrameBytes) bytes"))
        case .frame(let frame):
            var envelope = Envelope(kind: .request)
            if let failure = frame.withUnsafeReadableBytes({ EnvelopeParser.parse($0, into: &envelope) }) {
                // A oneway request (contract section 2) gets no response, not even an error.
                let oneway = failure.id == nil && isOnewayRequest(frame)
                badFrame(from: connection, idBytes: failure.id.map(encodedID), failure.error, answer: !oneway)
                return
            }
            // In place, by position: the values' getter would copy the whole peer.
            peers.values[slot].consecutiveBadFrames = 0
            switch envelope.kind {
            case .request: handleRequest(envelope, frame, from: connection, now: now)
            case .response: handleResponse(envelope, frame, from: connection, now: now)
            case .event: handleEvent(envelope, frame, from: connection, now: now)
            }
        }
    }

    public func disconnect(_ connection: ConnectionID, now: NIODeadline) -> [BrokerEffect] {
        guard let peer = peers.removeValue(forKey: connection) else { return [] }
        monitors[connection] = nil
        connectionsByUID[peer.credentials.uid]?.remove(connection)
        if connectionsByUID[peer.credentials.uid]?.isEmpty == true { connectionsByUID[peer.credentials.uid] = nil }
        forgetQueued(peer, connection)
        for call in pending.calls(toCallee: connection) {
            finish(call.daemonID)
            if call.caller != connection {
                recordAnswer(call, code: ErrorCode.componentUnavailable.rawValue, now: now)
                send(call.caller, writer.error(callerID: call.callerIDBytes, MediatorError(
                    .componentUnavailable, "the component serving \"\(call.target)\" disconnected with the call in flight")))
            }
        }
        for call in pending.calls(fromCaller: connection) {
            finish(call.daemonID)
            statistics.callerGone(call.statisticsSlot)
            sendCancelEvent(call)
        }
        dropHeld(from: connection)
        for (target, instance) in registry.removeConnection(connection, targets: peer.targets) {
            logger.info("target unregistered", metadata: ["target": "\(target)", "instance": "\(instance.instance)", "reason": "disconnected"])
            publishDaemonEvent("mediator.unregistered", [
                "target": .string(target), "instance": .int(Int64(instance.instance)), "reason": "disconnected",
            ])
            if registry.target(target) == nil { componentGone(target, now: now) }
        }
        var metadata: Logger.Metadata = ["connection": "\(connection)", "pid": "\(peer.credentials.pid)", "uid": "\(peer.credentials.uid)"]
        if let name = peer.name { metadata["name"] = "\(name)" }
        logger.info("connection closed", metadata: metadata)
        return takeEffects()
    }

    /// Answers every call whose timeout has passed; called at the time a
    /// ``BrokerEffect/wakeUp(at:)`` asked for.
    public func expireCalls(now: NIODeadline) -> [BrokerEffect] {
        armedWakeUp = nil
        for call in pending.expired(at: now) {
            finish(call.daemonID)
            statistics.timedOut(call.statisticsSlot)
            recordAnswer(call, code: ErrorCode.timeout.rawValue, now: now)
            send(call.caller, writer.error(callerID: call.callerIDBytes, MediatorError(
                .timeout, "no response from \"\(call.target)\" within \(call.timeoutMs) ms")))
            sendCancelEvent(call)
        }
        if let next = pending.earliestDeadline { wakeUp(at: next) }
        expireComponents(now: now)
        return takeEffects()
    }

    /// Answers every call still in flight; used when the daemon stops.
    public func answerAllPending(_ error: MediatorError) -> [BrokerEffect] {
        for call in pending.all {
            finish(call.daemonID)
            recordAnswer(call, code: error.code.rawValue, now: nil)
            send(call.caller, writer.error(callerID: call.callerIDBytes, error))
            sendCancelEvent(call)
        }
        return takeEffects()
    }

    /// Rebuilds the tables that a burst left mostly empty; says whether any was.
    /// Called now and then by the host, never on the routing path.
    func shrinkSparseTables() -> Bool {
        var shrank = pending.shrinkIfSparse()
        shrank = peers.shrinkIfSparse() || shrank
        shrank = connectionsByUID.shrinkIfSparse() || shrank
        for uid in Array(connectionsByUID.keys) {
            shrank = connectionsByUID[uid]?.shrinkIfSparse() == true || shrank
        }
        shrank = monitors.shrinkIfSparse() || shrank
        return shrank
    }

    // MARK: - Requests

    func handleRequest(_ envelope: Envelope, _ frame: ByteBuffer, from connection: ConnectionID, now: NIODeadline) {
        let idBytes = envelope.idRange.map { slice(frame, $0) }
        if let id = envelope.id,
            pending.isInFlight(caller: connection, id: id) || (!heldCalls.isEmpty && heldCalls.target(caller: connection, id: id) != nil)
        {
            send(connection, writer.error(callerID: nil, MediatorError(.badRequest, "id \(id) is already in flight on this connection")))
            return
        }
        let params = envelope.paramsRange.map { slice(frame, $0) }
        let trace = envelope.traceparentRange == nil ? nil : forwardedTrace(envelope, frame)
        if envelope.target == ProtocolConstants.daemonTarget {
            handleDaemonAction(envelope, params: params, idBytes: idBytes, from: connection, now: now, trace: trace)
            return
        }
        var remote: RemoteCaller?
        if let range = envelope.remoteCallerRange {
            switch remoteCaller(range, in: frame, from: connection) {
            case .success(let caller): remote = caller
            case .failure(let error):
                if let idBytes { send(connection, writer.error(callerID: idBytes, error)) }
                return
            }
        }
        route(
            RouteRequest(
                target: envelope.target, action: envelope.action, params: params, id: envelope.id, idBytes: idBytes,
                timeoutMs: envelope.timeoutMs, more: envelope.more, viaURL: false, trace: trace, remote: remote),
            from: connection, now: now)
    }

    struct RouteRequest {
        var target: String
        var action: String
        var params: ByteBuffer?
        var id: MessageID?
        var idBytes: ByteBuffer?
        var timeoutMs: Int64?
        var more: Bool
        var viaURL: Bool
        /// `traceparent`/`tracestate` as they arrived, passed on unchanged.
        var trace: ForwardedTrace? = nil
        /// Who called on another host (from this daemon's own NATS bridge only).
        var remote: RemoteCaller? = nil
    }

    /// What routing decided while looking at the target.
    enum RouteDecision {
        case refused(MediatorError)
        case forward(action: String, params: ByteBuffer?, result: Schema?, callee: ConnectionID, instance: Int, statisticsSlot: Int)
    }

    /// A connection's uid and `caller` member, read where the peer is
    /// stored: a dictionary's getter would copy the whole peer.
    func caller(_ connection: ConnectionID) -> (uid: UInt32, callerMember: ByteBuffer)? {
        guard let slot = peers.index(forKey: connection) else { return nil }
        func read(_ peer: inout Peer) -> (UInt32, ByteBuffer) { (peer.credentials.uid, peer.callerMember) }
        return read(&peers.values[slot])
    }

    /// A connection's credentials, read where the peer is stored.
    func credentials(of connection: ConnectionID) -> PeerCredentials? {
        guard let slot = peers.index(forKey: connection) else { return nil }
        func read(_ peer: inout Peer) -> PeerCredentials { peer.credentials }
        return read(&peers.values[slot])
    }

    /// Contract section 4: picks the instance and forwards the call, holds it
    /// for a component being started, or answers why not.
    func route(_ request: RouteRequest, from connection: ConnectionID, now: NIODeadline) {
        func fail(_ error: MediatorError) {
            if let idBytes = request.idBytes { send(connection, writer.error(callerID: idBytes, error)) }
        }
        let notFound = { MediatorError(.targetNotFound, "no component serves target \"\(request.target)\"") }
        guard let (uid, connectionCaller) = caller(connection) else { return fail(notFound()) }
        var callerMember = connectionCaller
        if let remote = request.remote {
            // A caller on another host: the policy's remote rules decide, and
            // the component learns who it was, beside the bridge's own caller.
            if let denial = checkPolicy(.call(target: request.target, action: request.action), remote: remote) {
                return fail(denial)
            }
            callerMember = writer.callerMember(callerMember, remote: remote)
        } else if uid != 0, let credentials = credentials(of: connection),
            // uid 0 may do anything (Policy.allows): its credentials are not even read.
            let denial = checkPolicy(.call(target: request.target, action: request.action), credentials)
        {
            return fail(denial)
        }
        if holdIfActivating(request, from: connection, now: now) { return }
        // The target is looked at where it is stored (no copy of it), and the
        // instance is picked and its call counted in the same visit.
        let decision = registry.withTarget(request.target) { target -> RouteDecision in
            let resolved: ResolvedAction
            switch resolveAction(request, specs: target.actionsByName) {
            case .failure(let error): return .refused(error)
            case .success(let action): resolved = action
            }
            if let idBytes = request.idBytes,
                let refusal = callLimitRefusal(connection, uid: uid, bytes: idBytes.readableBytes)
            {
                return .refused(refusal)
            }
            guard let index = target.pickInstance() else { return .refused(notFound()) }
            let callee = target.instances[index].connection
            if let refusal = queueQuotaRefusal(toward: callee, target: request.target) { return .refused(refusal) }
            if request.id != nil, request.idBytes != nil { target.instances[index].inFlight += 1 }
            // The one lookup statistics cost a call; the pending call keeps the slot.
            let statisticsSlot: Int
            if let known = target.statisticsSlots[resolved.action] {
                statisticsSlot = known
            } else {
                statisticsSlot = statistics.slot(target: request.target, action: resolved.action)
                target.statisticsSlots[resolved.action] = statisticsSlot
            }
            return .forward(
                action: resolved.action, params: resolved.params, result: resolved.result, callee: callee,
                instance: target.instances[index].instance, statisticsSlot: statisticsSlot)
        }
        let action: String
        let params: ByteBuffer?
        let resultSchema: Schema?
        let instance: (connection: ConnectionID, instance: Int)
        let statisticsSlot: Int
        switch decision {
        case nil: return fail(notFound())
        case .refused(let error)?: return fail(error)
        case .forward(let resolvedAction, let resolvedParams, let resolvedResult, let callee, let number, let slot)?:
            (action, params, resultSchema, instance) = (resolvedAction, resolvedParams, resolvedResult, (callee, number))
            statisticsSlot = slot
        }
        let timeoutMs = request.timeoutMs ?? configuration.defaultTimeoutMs
        var daemonID: Int64?
        if let id = request.id, let idBytes = request.idBytes {
            let newID = pending.makeDaemonID()
            let deadline = now + .milliseconds(timeoutMs)
            pending.insert(PendingCalls.Call(
                daemonID: newID, caller: connection, callerID: id, callerIDBytes: ownCopy(idBytes), callee: instance.connection,
                target: request.target, action: action, instance: instance.instance, more: request.more,
                timeoutMs: timeoutMs, deadline: deadline, startedAt: now, resultSchema: resultSchema,
                statisticsSlot: statisticsSlot))
            wakeUp(at: deadline)
            daemonID = newID
        }
        statistics.callRouted(statisticsSlot, stream: request.more && daemonID != nil)
        noteActivity(request.target, now: now)
        if logsCalls, let credentials = credentials(of: connection) {
            logger.debug(
                "call routed",
                metadata: [
                    "target": "\(request.target)", "action": "\(action)", "pid": "\(credentials.pid)",
                    "uid": "\(credentials.uid)", "instance": "\(instance.instance)",
                ])
        }
        let forwarded = writer.forwardedRequest(
            daemonID: daemonID, target: request.target, action: action, params: params, timeoutMs: timeoutMs,
            more: request.more, caller: callerMember, trace: request.trace)
        send(instance.connection, forwarded)
        if !monitors.isEmpty {
            monitorRecord(
                "request", from: connection, to: instance.connection, target: request.target, event: nil, elapsed: nil,
                message: forwarded, now: now)
        }
    }

    // MARK: - Bookkeeping

    /// Takes a call out of those in flight; returns it.
    @discardableResult
    func finish(_ daemonID: Int64, now: NIODeadline? = nil) -> PendingCalls.Call? {
        guard let call = pending.remove(daemonID) else { return nil }
        registry.adjustInFlight(target: call.target, instance: call.instance, by: -1)
        if let now, !components.isEmpty, components[call.target] != nil {
            noteActivity(call.target, now: now)
            scheduleComponentWakeUp(now: now)
        }
        return call
    }

    func sendCancelEvent(_ call: PendingCalls.Call) {
        guard peers[call.callee] != nil else { return }
        send(call.callee, writer.event("mediator.cancel", data: ["id": .int(call.daemonID)]))
    }

    func badFrame(from connection: ConnectionID, idBytes: ByteBuffer?, _ error: MediatorError, answer: Bool = true) {
        if answer { send(connection, writer.error(callerID: idBytes, error)) }
        statistics.daemon.badFrames += 1
        let count = (peers[connection]?.consecutiveBadFrames ?? 0) + 1
        peers[connection]?.consecutiveBadFrames = count
        if count >= configuration.maxConsecutiveBadFrames {
            logger.notice("disconnecting a peer that keeps sending bad frames", metadata: ["connection": "\(connection)"])
            effects.append(.close(connection))
        }
    }

    /// Whether a frame the envelope parser refused is still a JSON object
    /// with `target` and `action` and no `id`: a oneway request, which gets
    /// no answer even when malformed. One with only one of the two is none
    /// of the three kinds (contract section 2): it is answered.
    func isOnewayRequest(_ frame: ByteBuffer) -> Bool {
        guard let members = decode(frame)?.objectValue, members["id"] == nil else { return false }
        return members["target"] != nil && members["action"] != nil
    }

    func wakeUp(at deadline: NIODeadline) {
        if let armed = armedWakeUp, armed <= deadline { return }
        armedWakeUp = deadline
        effects.append(.wakeUp(at: deadline))
    }

    func send(_ connection: ConnectionID, _ buffer: ByteBuffer) {
        effects.append(.send(connection, buffer))
    }

    func takeEffects() -> [BrokerEffect] {
        defer { effects.removeAll(keepingCapacity: true) }
        return effects
    }

    /// The effects so far, leaving `spare` (emptied, its storage kept) in
    /// their place: a host that hands the array back each time allocates none.
    func takeEffects(reusing spare: inout [BrokerEffect]) -> [BrokerEffect] {
        // One or two effects each time: removed one by one, which is cheaper
        // than removeAll's general replaceSubrange.
        while !spare.isEmpty { spare.removeLast() }
        swap(&effects, &spare)
        defer { spare = [] }
        return spare
    }

    /// A request's trace members as slices of its frame (the parser kept them only when well formed).
    func forwardedTrace(_ envelope: Envelope, _ frame: ByteBuffer) -> ForwardedTrace? {
        guard let range = envelope.traceparentRange else { return nil }
        return ForwardedTrace(traceparent: slice(frame, range), tracestate: envelope.tracestateRange.map { slice(frame, $0) })
    }

    func slice(_ frame: ByteBuffer, _ range: Range<Int>) -> ByteBuffer {
        frame.getSlice(at: frame.readerIndex + range.lowerBound, length: range.count) ?? ByteBuffer()
    }

    /// `bytes` in storage of their own. A slice shares its frame's storage,
    /// so whatever outlives the line it came from (a pending call's id, a
    /// held call's params) is copied: a 20-byte id must not keep a 1 MiB
    /// frame alive for as long as the call is in flight.
    func ownCopy(_ bytes: ByteBuffer) -> ByteBuffer {
        var copy = writer.allocator.buffer(capacity: bytes.readableBytes)
        copy.writeImmutableBuffer(bytes)
        return copy
    }

    func decode(_ buffer: ByteBuffer) -> JSONValue? {
        buffer.withUnsafeReadableBytes { try? JSONParser.parse($0) }
    }

    func encodedID(_ id: MessageID) -> ByteBuffer {
        var buffer = writer.allocator.buffer(capacity: 16)
        buffer.writeBytes(id.json.encoded)
        return buffer
    }
}
