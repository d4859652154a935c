import Logging
import MediatorConfiguration
import MediatorProtocol
import MediatorTransport
import NIOCore

// Requests: reading one, checking it, and routing a call to an instance.
extension Broker {
    func handleRequest(_ envelope: Envelope, _ frame: ByteBuffer, from connection: ConnectionID, now: NIODeadline) {
        let idBytes = envelope.idRange.map { slice(frame, $0) }
        if let id = envelope.id,
            inFlight.isInFlight(caller: connection, id: id)
                || (!activation.heldCalls.isEmpty && activation.heldCalls.target(caller: connection, id: id) != nil)
                || (!reregistrationHold.isEmpty && reregistrationHold.index.target(caller: connection, id: id) != nil)
        {
            send(connection, writer.error(callerID: nil, MediatorError(.badRequest, "id \(id) is already in flight on this connection"), delivered: .no))
            return
        }
        var descriptors: PassedDescriptors?
        if envelope.fds > 0 {
            if let refusal = descriptorRefusal(envelope, from: connection) {
                refuse(
                    RouteRequest(
                        target: envelope.target, action: envelope.action, params: nil, id: envelope.id, idBytes: idBytes,
                        timeoutMs: envelope.timeoutMs, more: envelope.more, viaURL: false),
                    from: connection, refusal, now: now)
                return
            }
            descriptors = takeArrivingDescriptors()
            // The socket layer hands a line its descriptors only when some
            // arrived; a line that declares more than came is refused here.
            guard let arrived = descriptors, arrived.count == envelope.fds else {
                if let descriptors { release(descriptors) }
                badFrame(
                    from: connection, idBytes: idBytes.map(ownCopy),
                    MediatorError(.badRequest, "file descriptors do not match \"fds\": \(envelope.fds) declared, \(descriptors?.count ?? 0) arrived"),
                    answer: idBytes != nil)
                return
            }
        }
        let params = envelope.paramsRange.map { slice(frame, $0) }
        if let descriptors, let refusal = descriptorReferenceProblem(params, fds: envelope.fds, root: "params") {
            release(descriptors)
            badFrame(from: connection, idBytes: idBytes.map(ownCopy), refusal, answer: idBytes != nil)
            return
        }
        let trace = envelope.traceparentRange == nil ? nil : forwardedTrace(envelope, frame)
        if envelope.target == ProtocolConstants.daemonTarget {
            if let descriptors {
                release(descriptors)
                if let idBytes {
                    send(connection, writer.error(callerID: idBytes, MediatorError(
                        .fdsNotSupported, "the daemon's own actions take no file descriptors"), delivered: .no))
                }
                return
            }
            handleDaemonAction(envelope, params: params, idBytes: idBytes, from: connection, now: now, trace: trace)
            return
        }
        var remote: RemoteCaller?
        if let range = envelope.remoteCallerRange {
            switch remoteCaller(range, in: frame, from: connection) {
            case .success(let caller): remote = caller
            case .failure(let error):
                if let idBytes { send(connection, writer.error(callerID: idBytes, error, delivered: .no)) }
                return
            }
        }
        route(
            RouteRequest(
                target: envelope.target, action: envelope.action, params: params, id: envelope.id, idBytes: idBytes,
                timeoutMs: envelope.timeoutMs, more: envelope.more, viaURL: false, trace: trace, remote: remote,
                descriptors: descriptors),
            from: connection, now: now)
    }

    /// Why the `{"$fd": I}` values of a message with `fds` descriptors are
    /// wrong (I not below `fds`, not an integer, another member beside it),
    /// or nil; a pass over the value, for messages with descriptors only.
    func descriptorReferenceProblem(_ value: ByteBuffer?, fds: Int, root: String) -> MediatorError? {
        guard let value else { return nil }
        do throws(MediatorError) {
            _ = try value.withUnsafeReadableBytes { (raw) throws(MediatorError) in
                try FileDescriptorReferences.indexes(in: raw, fds: fds, root: root)
            }
            return nil
        } catch {
            return error
        }
    }

    /// Why a request that declares descriptors (contract section 8) is not
    /// routed, or nil when it may be: its sender must have been granted
    /// `max_fds` in `hello` and stay within it and its uid's quota.
    func descriptorRefusal(_ envelope: Envelope, from connection: ConnectionID) -> MediatorError? {
        guard let peer = peers[connection], peer.passesDescriptors else {
            if passesDescriptors || peers[connection]?.askedForDescriptors != true {
                return MediatorError(.badRequest, "a message with \"fds\" needs \"fds\": true in hello first")
            }
            return MediatorError(.fdsNotSupported, "this mediatord does not pass file descriptors (its hello answered no max_fds)")
        }
        if envelope.fds > configuration.maxFdsPerMessage {
            return MediatorError(.badRequest, "\"fds\" is \(envelope.fds), over max_fds \(configuration.maxFdsPerMessage)")
        }
        return descriptorQuotaRefusal(peer.credentials)
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
        /// The descriptors it carries (`fds`), passed on with it or released.
        var descriptors: PassedDescriptors? = nil
        /// The request's `fds`: what a descriptor's `{"$fd": I}` in `params` is checked against.
        var fds: Int { descriptors?.count ?? 0 }
    }

    /// `id` as a value, not a copy between two places in memory, which
    /// goes through `MessageID?`'s value witness (~130 instructions) even
    /// with `-disable-type-layout`; not inlined, so that it stays a value.
    @inline(never)
    static func loaded(_ id: MessageID?) -> MessageID? { id }

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
        // Local functions, not a closure value: a closure would copy the
        // whole request into a context of its own.
        func fail(_ error: MediatorError) { refuse(request, from: connection, error, now: now) }
        func notFound() -> MediatorError { targetNotFound(request.target) }
        guard let (uid, connectionCaller) = caller(connection) else { return fail(notFound()) }
        var callerMember = connectionCaller
        if let remote = request.remote {
            // A caller on another host: the policy's remote rules decide, and
            // the component learns who it was, beside the bridge's own caller.
            if let denial = checkPolicy(.call(target: request.target, action: request.action), remote: remote)
                ?? (request.descriptors == nil ? nil : checkPolicy(.sendDescriptors(target: request.target), remote: remote))
            {
                return fail(denial)
            }
            callerMember = writer.callerMember(callerMember, remote: remote)
        } else if uid != 0, let credentials = credentials(of: connection),
            // uid 0 may do anything (Policy.allows): its credentials are not even read.
            let denial = checkPolicy(.call(target: request.target, action: request.action), credentials)
                // A call with descriptors needs the `send_fds` grant for its target too.
                ?? (request.descriptors == nil ? nil : checkPolicy(.sendDescriptors(target: request.target), credentials))
        {
            return fail(denial)
        }
        if holdIfActivating(request, from: connection, now: now) { return }
        // The target is looked at where it is stored (no copy of it), and the
        // instance is picked and its call counted in the same visit.
        let decision = registry.withTarget(request.target) { target -> RouteDecision in
            let resolved: ResolvedAction
            switch resolveAction(request, found: target.routingFacts(request.action), specs: target.actionsByName) {
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
            if request.descriptors != nil, peers[callee]?.passesDescriptors != true {
                return .refused(MediatorError(
                    .fdsNotSupported, "the component serving \"\(request.target)\" did not say \"fds\": true in hello"))
            }
            if let refusal = queueQuotaRefusal(toward: callee, target: request.target) { return .refused(refusal) }
            if request.id != nil, request.idBytes != nil { target.instances[index].inFlight += 1 }
            // At most one lookup for statistics per call (none when the
            // action is the last one routed here); the pending call keeps the slot.
            let statisticsSlot: Int
            if let last = target.lastStatisticsSlot, last.action == resolved.action {
                statisticsSlot = last.slot
            } else {
                if let known = target.statisticsSlots[resolved.action] {
                    statisticsSlot = known
                } else {
                    statisticsSlot = statistics.slot(target: request.target, action: resolved.action)
                    target.statisticsSlots[resolved.action] = statisticsSlot
                }
                target.lastStatisticsSlot = (resolved.action, statisticsSlot)
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
        case nil:
            // After a crash its component may be about to register again.
            if holdUntilReregistered(request, from: connection, now: now) { return }
            return fail(notFound())
        case .refused(let error)?: return fail(error)
        case .forward(let resolvedAction, let resolvedParams, let resolvedResult, let callee, let number, let slot)?:
            (action, params, resultSchema, instance) = (resolvedAction, resolvedParams, resolvedResult, (callee, number))
            statisticsSlot = slot
        }
        let timeoutMs = request.timeoutMs ?? configuration.defaultTimeoutMs
        var daemonID: Int64?
        if let idBytes = request.idBytes, let id = Self.loaded(request.id) {
            let newID = inFlight.makeDaemonID()
            let deadline = now + .milliseconds(timeoutMs)
            inFlight.insert(CallsInFlight.Call(
                daemonID: newID, caller: connection, callerID: id, callerIDBytes: ownIDCopy(idBytes), callee: instance.connection,
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
            more: request.more, caller: callerMember, trace: request.trace, fds: request.descriptors?.count ?? 0,
            storage: &spareLine)
        send(instance.connection, forwarded, descriptors: request.descriptors)
        if !monitors.isEmpty {
            monitorRecord(
                "request", from: connection, to: instance.connection, target: request.target, event: nil, elapsed: nil,
                message: forwarded, now: now)
        }
    }
}
