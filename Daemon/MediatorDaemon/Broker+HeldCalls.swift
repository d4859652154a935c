import Logging
import MediatorProtocol
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Calls to a target whose component is being started: held in arrival
/// order, counted against the caller's limits, and delivered once the
/// target registers (or answered when it fails, times out or is cancelled).
extension Broker {
    /// Whether a call to `target` must wait for the component (and so was held or answered).
    func holdIfActivating(_ request: RouteRequest, from connection: ConnectionID, now: NIODeadline) -> Bool {
        // Most daemons manage no component: then no name is hashed on this path.
        guard !components.isEmpty, let component = components[request.target] else { return false }
        if component.state == .running, registry.target(request.target) != nil { return false }
        func fail(_ error: MediatorError) -> Bool {
            refuse(request, from: connection, error, now: now)
            return true
        }
        if component.state == .failed {
            return fail(MediatorError(
                .activationFailed,
                "\"\(request.target)\" failed and is not started again: \(component.lastExit ?? "unknown reason"); `mediatorctl start \(request.target)` retries"))
        }
        // Check the call against the manifest now, so a bad call fails at once.
        var byName: [String: ActionSpec] = [:]
        for spec in component.manifest.actions { byName[spec.name] = spec }
        if case .failure(let error) = resolveAction(request, specs: byName) { return fail(error) }
        // A held call keeps its params (and id) until it goes out: both are
        // copied off the frame, and count against the limits, oneway or not.
        var held = request
        held.params = request.params.map(ownCopy)
        held.idBytes = request.idBytes.map(ownCopy)
        held.trace = request.trace.map { ForwardedTrace(traceparent: ownCopy($0.traceparent), tracestate: $0.tracestate.map(ownCopy)) }
        let bytes = (held.params?.readableBytes ?? 0) + (held.idBytes?.readableBytes ?? 0) + (held.trace?.lineBytes ?? 0)
        if let uid = peers[connection]?.credentials.uid, let refusal = callLimitRefusal(connection, uid: uid, bytes: bytes) {
            return fail(refusal)  // a oneway call is dropped: nothing is ever sent back for it
        }
        let deadline = request.id == nil ? nil : now + .milliseconds(request.timeoutMs ?? configuration.defaultTimeoutMs)
        components[request.target]?.held.append(
            ManagedComponent.HeldCall(caller: connection, request: held, deadline: deadline, bytes: bytes))
        heldCalls.add(caller: connection, id: request.id, bytes: bytes, target: request.target)
        logger.debug("call held until the component registers", metadata: ["target": "\(request.target)", "action": "\(request.action)"])
        if component.state == .activatable { start(request.target, now: now) }
        scheduleComponentWakeUp(now: now)
        return true
    }

    func callsInFlight(of connection: ConnectionID) -> Int {
        pending.callsInFlight(of: connection) + heldCalls.calls(of: connection)
    }

    /// Delivers the held calls in arrival order, each with the time it has left.
    func deliverHeld(_ target: String, now: NIODeadline) {
        guard let held = components[target]?.held, !held.isEmpty else { return }
        components[target]?.held = []
        for call in held {
            heldCalls.remove(caller: call.caller, id: call.request.id, bytes: call.bytes)
            guard peers[call.caller] != nil else {
                countHeldEnd(call, code: nil)
                continue
            }
            var request = call.request
            if let deadline = call.deadline {
                request.timeoutMs = max(1, (deadline - now).nanoseconds / 1_000_000)
            }
            route(request, from: call.caller, now: now)
        }
    }

    func failHeld(_ target: String, _ error: MediatorError) {
        for waiter in startWaiters.removeValue(forKey: target) ?? [] {
            heldCalls.remove(caller: waiter.connection, id: waiter.id, bytes: waiter.bytes)
            if let idBytes = waiter.idBytes, peers[waiter.connection] != nil {
                send(waiter.connection, writer.error(callerID: idBytes, error, delivered: .no))
            }
        }
        guard let held = components[target]?.held else { return }
        components[target]?.held = []
        for call in held {
            heldCalls.remove(caller: call.caller, id: call.request.id, bytes: call.bytes)
            countHeldEnd(call, code: error.code.rawValue)
            if let idBytes = call.request.idBytes, peers[call.caller] != nil {
                send(call.caller, writer.error(callerID: idBytes, error, delivered: .no))
            }
        }
    }

    /// A held call that ended before it could be forwarded, in the statistics (nil: its caller left).
    func countHeldEnd(_ call: ManagedComponent.HeldCall, code: String?) {
        statistics.heldCallEnded(statistics.slot(target: call.request.target, action: call.request.action), code: code)
    }

    func dropHeld(from connection: ConnectionID) {
        for target in startWaiters.keys {
            startWaiters[target]?.removeAll { $0.connection == connection }
        }
        for target in components.keys {
            components[target]?.held.removeAll { call in
                guard call.caller == connection else { return false }
                countHeldEnd(call, code: nil)
                return true
            }
        }
        heldCalls.forget(connection)
    }

    /// `cancel` of a call still held for its component: it leaves the queue
    /// and is answered `cancelled`, as a call in flight would be. False
    /// when no held call (nor `start`) of the connection has that id.
    func cancelHeld(caller connection: ConnectionID, id: MessageID) -> Bool {
        guard let target = heldCalls.target(caller: connection, id: id) else { return false }
        var idBytes: ByteBuffer?
        if let index = components[target]?.held.firstIndex(where: { $0.caller == connection && $0.request.id == id }),
            let call = components[target]?.held.remove(at: index)
        {
            heldCalls.remove(caller: connection, id: id, bytes: call.bytes)
            countHeldEnd(call, code: ErrorCode.cancelled.rawValue)
            idBytes = call.request.idBytes
        } else if let index = startWaiters[target]?.firstIndex(where: { $0.connection == connection && $0.id == id }),
            let waiter = startWaiters[target]?.remove(at: index)
        {
            heldCalls.remove(caller: connection, id: id, bytes: waiter.bytes)
            idBytes = waiter.idBytes
        }
        if let idBytes {
            send(connection, writer.error(callerID: idBytes, MediatorError(.cancelled, "the caller cancelled the call"), delivered: .no))
        }
        return true
    }
}
