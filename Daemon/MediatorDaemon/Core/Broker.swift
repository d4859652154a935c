import Logging
import MediatorConfiguration
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
package final class Broker {
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
        /// Said `"fds": true` in `hello` (contract section 8).
        var askedForDescriptors = false
        /// Was granted `max_fds` in `hello`: it sends and takes descriptors.
        var passesDescriptors = false
    }

    /// Replaced on reload (SIGHUP); read on every use, never cached.
    package internal(set) var configuration: DaemonConfiguration {
        didSet { statistics.slowCallThresholdNanoseconds = configuration.slowCallThresholdNanoseconds }
    }
    package let version: String
    var logger: Logger {
        didSet { logsCalls = logger.logLevel <= .debug }
    }
    /// Whether each routed call is logged (debug): checked without copying the logger on every call.
    private(set) var logsCalls = false
    let writer = FrameWriter()
    var peers = PeerTable()
    package internal(set) var registry = Registry()
    package internal(set) var inFlight = CallsInFlight()
    var armedWakeUp: NIODeadline?
    var effects: [BrokerEffect] = []
    /// Storage of a line the host queued already, and of a finished call's
    /// id, for the next forwarded line and the next call's id
    /// (Broker+SpareBuffers.swift).
    var spareLine: ByteBuffer?
    var spareID: ByteBuffer?
    /// Whether the host passes descriptors (it reads with recvmsg): only
    /// then does `hello` grant `max_fds`.
    package var passesDescriptors = false
    /// The descriptors of the line being handled, until a path takes them
    /// (``takeArrivingDescriptors()``); whatever is left when the line is
    /// done is released, so no path can lose them.
    var arrivingDescriptors: PassedDescriptors?
    package var callsRouted: Int { statistics.daemon.callsRouted }
    /// What `mediator/stats` reports (Broker+Statistics.swift); `list`'s calls_served comes from it too.
    var statistics: BrokerStatistics
    /// Call latencies for swift-metrics, when an exporter wants them (nil: nothing recorded).
    var latencyMetrics: CallLatencyMetrics?
    /// Bytes queued toward a connection that its socket has not taken, as
    /// its host measures them now (nil without a host: unit tests).
    var backlog: ((ConnectionID) -> Int)?
    /// Descriptors the host holds for a uid (received, not yet written or
    /// closed), for the quota on them (nil without a host: unit tests).
    var descriptorsHeld: ((UInt32) -> Int)?
    /// The host's counts of descriptors received, closed undelivered and
    /// held, for statistics (nil without a host: unit tests).
    var descriptorCounts: (() -> DescriptorCounts)?
    /// A stream whose caller has more than `max_outbound_bytes` divided by
    /// this queued is ended (``endStream(_:backlog:now:)``) rather than
    /// grown until the caller is disconnected as a peer that does not read.
    static let streamBacklogDivisor = 2
    /// Members that services of this process add to `mediator/stats`
    /// (``MediatorServer/addStatisticsSection(_:_:)``), read at each answer.
    var statisticsSections: [(name: String, read: @Sendable () -> JSONValue?)] = []
    /// Where the daemon's time starts: the uptime of `mediator/stats` and of
    /// monitor records; tests set it to their clock's start.
    var statisticsStart = NIODeadline.now()

    /// Components started on demand, their processes and the calls held
    /// for them (ComponentActivation.swift; Broker+Activation.swift carries out its actions).
    var activation = ComponentActivation()
    /// Calls to targets not registered again yet, held for a short while
    /// after a crash's connections were adopted (Broker+ReregistrationHold.swift).
    var reregistrationHold = ReregistrationHold()
    /// Who may do what; the default until policy files are loaded.
    var policy = Policy.defaultPolicy(daemonUID: UInt32(getuid()))
    /// Connections that monitor traffic, with what they want to see.
    var monitors = Monitors()
    /// Each uid's connections and queued bytes, for the per-uid quotas.
    var quotas = QuotaLedger()
    /// Set by `register`, handled right after its answer is queued.
    var pendingRegistration: (target: String, pid: Int32)?
    /// This process: a connection from it is the daemon's own NATS bridge,
    /// the only peer that may register stand-ins for other hosts' targets.
    /// A var so that tests can play the bridge.
    var ownProcessID: Int32 = getpid()

    package init(configuration: DaemonConfiguration, version: String = MediatorVersion.current, logger: Logger) {
        self.configuration = configuration
        self.version = version
        self.logger = logger
        self.logsCalls = logger.logLevel <= .debug
        self.statistics = BrokerStatistics(slowCallThresholdNanoseconds: configuration.slowCallThresholdNanoseconds)
    }

    package var connectionCount: Int { peers.count }

    // MARK: - Inputs

    /// Admits a connection, or says which quota refuses it.
    @discardableResult
    package func connect(_ connection: ConnectionID, credentials: PeerCredentials) -> MediatorError? {
        if let refusal = quotaExceeded(.connections, credentials: credentials) {
            statistics.daemon.connectionsRefused += 1
            return refusal
        }
        statistics.connectionOpened(uid: credentials.uid)
        peers[connection] = Peer(credentials: credentials, callerMember: writer.callerMember(credentials, name: nil))
        quotas.admit(connection, uid: credentials.uid)
        logger.info(
            "connection opened",
            metadata: ["connection": "\(connection)", "pid": "\(credentials.pid)", "uid": "\(credentials.uid)"])
        return nil
    }

    package func receive(
        _ line: InboundLine, from connection: ConnectionID, descriptors: PassedDescriptors? = nil, now: NIODeadline
    ) -> [BrokerEffect] {
        handle(line, from: connection, descriptors: descriptors, now: now)
        return takeEffects()
    }

    /// ``receive(_:from:descriptors:now:)`` leaving the effects in
    /// ``effects``, for a host that takes them with ``takeEffects(reusing:)``.
    func handle(_ line: InboundLine, from connection: ConnectionID, descriptors: PassedDescriptors? = nil, now: NIODeadline) {
        if let descriptors {
            arrivingDescriptors = descriptors
            handleLine(line, from: connection, now: now)
            if let left = takeArrivingDescriptors() { release(left) }
        } else {
            handleLine(line, from: connection, now: now)
        }
    }

    /// The descriptors of the line being handled, now the caller's to send or release.
    func takeArrivingDescriptors() -> PassedDescriptors? {
        defer { arrivingDescriptors = nil }
        return arrivingDescriptors
    }

    func release(_ descriptors: PassedDescriptors) {
        effects.append(.releaseDescriptors(descriptors))
    }

    private func handleLine(_ line: InboundLine, from connection: ConnectionID, now: NIODeadline) {
        // The peer by position: looking at it copies nothing.
        guard let slot = peers.index(forKey: connection) else { return }
        switch line {
        case .tooLarge:
            badFrame(from: connection, idBytes: nil, MediatorError(.frameTooLarge, "frame longer than \(configuration.maxFrameBytes) bytes"))
        case .frame(let frame):
            var envelope = Envelope(kind: .request)
            if let failure = frame.withUnsafeReadableBytes({ EnvelopeParser.parse($0, intoFresh: &envelope) }) {
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

    package func disconnect(_ connection: ConnectionID, now: NIODeadline) -> [BrokerEffect] {
        guard let peer = peers.removeValue(forKey: connection) else { return [] }
        monitors.detach(connection)
        carryOut(quotas.remove(connection, uid: peer.credentials.uid, queueLimit: configuration.maxQueuedBytesPerUID))
        for call in inFlight.calls(toCallee: connection) {
            finish(call.daemonID)
            if call.caller != connection {
                recordAnswer(call, code: ErrorCode.componentUnavailable.rawValue, now: now)
                send(call.caller, writer.error(callerID: call.callerIDBytes, MediatorError(
                    .componentUnavailable, "the component serving \"\(call.target)\" disconnected with the call in flight"),
                    delivered: forwardedDelivery(call)))
            }
        }
        for call in inFlight.calls(fromCaller: connection) {
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
    func expireCalls(now: NIODeadline) -> [BrokerEffect] {
        armedWakeUp = nil
        for call in inFlight.expired(at: now) {
            finish(call.daemonID)
            statistics.timedOut(call.statisticsSlot)
            recordAnswer(call, code: ErrorCode.timeout.rawValue, now: now)
            send(call.caller, writer.error(callerID: call.callerIDBytes, MediatorError(
                .timeout, "no response from \"\(call.target)\" within \(call.timeoutMs) ms"), delivered: forwardedDelivery(call)))
            sendCancelEvent(call)
        }
        if let next = inFlight.earliestDeadline { wakeUp(at: next) }
        expireComponents(now: now)
        expireReregistrationHold(now: now)
        return takeEffects()
    }

    /// Answers every call still in flight; used when the daemon stops.
    func answerAllPending(_ error: MediatorError) -> [BrokerEffect] {
        for call in inFlight.all {
            finish(call.daemonID)
            recordAnswer(call, code: error.code.rawValue, now: nil)
            send(call.caller, writer.error(callerID: call.callerIDBytes, error, delivered: forwardedDelivery(call)))
            sendCancelEvent(call)
        }
        return takeEffects()
    }

    /// Rebuilds the tables that a burst left mostly empty; says whether any was.
    /// Called now and then by the host, never on the routing path.
    func shrinkSparseTables() -> Bool {
        var shrank = inFlight.shrinkIfSparse()
        shrank = peers.shrinkIfSparse() || shrank
        shrank = quotas.shrinkIfSparse() || shrank
        shrank = monitors.shrinkIfSparse() || shrank
        return shrank
    }

    // MARK: - Bookkeeping

    /// Takes a call out of those in flight; returns it.
    @discardableResult
    func finish(_ daemonID: Int64, now: NIODeadline? = nil) -> CallsInFlight.Call? {
        guard let call = inFlight.remove(daemonID) else { return nil }
        registry.adjustInFlight(target: call.target, instance: call.instance, by: -1)
        if let now, !activation.components.isEmpty, activation.components[call.target] != nil {
            noteActivity(call.target, now: now)
            scheduleComponentWakeUp(now: now)
        }
        return call
    }

    /// What the daemon knows of a call it forwarded and answers itself: a
    /// local component got it (and may have run it); a stand-in for another
    /// host's target (the NATS bridge) may not have got it to that host.
    func forwardedDelivery(_ call: CallsInFlight.Call) -> CallDelivery {
        // Error path only: the registry is looked at when a call fails, never when it succeeds.
        let remote = registry.target(call.target)?.instances.contains { $0.instance == call.instance && $0.remoteHost != nil }
        return remote == true ? .unknown : .yes
    }

    func sendCancelEvent(_ call: CallsInFlight.Call) {
        guard peers[call.callee] != nil else { return }
        send(call.callee, writer.event("mediator.cancel", data: ["id": .int(call.daemonID)]))
    }

    func badFrame(from connection: ConnectionID, idBytes: ByteBuffer?, _ error: MediatorError, answer: Bool = true) {
        if answer { send(connection, writer.error(callerID: idBytes, error, delivered: .no)) }
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

    /// A line with descriptors; released instead when the peer is gone.
    func send(_ connection: ConnectionID, _ buffer: ByteBuffer, descriptors: PassedDescriptors?) {
        guard let descriptors else { return send(connection, buffer) }
        effects.append(peers[connection] == nil ? .releaseDescriptors(descriptors) : .sendWithDescriptors(connection, buffer, descriptors))
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
