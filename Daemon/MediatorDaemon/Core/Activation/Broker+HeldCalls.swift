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
        guard !activation.components.isEmpty, let component = activation.components[request.target] else { return false }
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
        let held: ManagedComponent.HeldCall
        switch heldCall(request, from: connection, now: now) {
        case .failure(let refusal): return fail(refusal)  // a oneway call is dropped: nothing is ever sent back for it
        case .success(let call): held = call
        }
        logger.debug("call held until the component registers", metadata: ["target": "\(request.target)", "action": "\(request.action)"])
        carryOut(activation.hold(held, now: now, registry: registry), now: now)
        return true
    }

    /// The call as it waits: its params, id and trace copied off the frame
    /// (it keeps them until it goes out, and they count against the
    /// limits, oneway or not), its deadline from its timeout; or the
    /// limit's refusal.
    func heldCall(_ request: RouteRequest, from connection: ConnectionID, now: NIODeadline) -> Result<ManagedComponent.HeldCall, MediatorError> {
        var held = request
        held.params = request.params.map(ownCopy)
        held.idBytes = request.idBytes.map(ownCopy)
        held.trace = request.trace.map { ForwardedTrace(traceparent: ownCopy($0.traceparent), tracestate: $0.tracestate.map(ownCopy)) }
        let bytes = (held.params?.readableBytes ?? 0) + (held.idBytes?.readableBytes ?? 0) + (held.trace?.lineBytes ?? 0)
        if let uid = peers[connection]?.credentials.uid, let refusal = callLimitRefusal(connection, uid: uid, bytes: bytes) {
            return .failure(refusal)
        }
        let deadline = request.id == nil ? nil : now + .milliseconds(request.timeoutMs ?? configuration.defaultTimeoutMs)
        return .success(ManagedComponent.HeldCall(caller: connection, request: held, deadline: deadline, bytes: bytes))
    }

    func callsInFlight(of connection: ConnectionID) -> Int {
        inFlight.callsInFlight(of: connection) + activation.heldCalls.calls(of: connection)
            + reregistrationHold.index.calls(of: connection)
    }

    /// A held call that ended before it could be forwarded, in the statistics (nil: its caller left).
    func countHeldEnd(_ call: ManagedComponent.HeldCall, code: String?) {
        // A held call that ends unforwarded closes what it carried.
        if let descriptors = call.request.descriptors { release(descriptors) }
        statistics.heldCallEnded(statistics.slot(target: call.request.target, action: call.request.action), code: code)
    }

    func dropHeld(from connection: ConnectionID) {
        for call in activation.dropHeld(from: connection) { countHeldEnd(call, code: nil) }
        dropReregistrationHeld(from: connection)
    }

    /// `cancel` of a call still held for its component: it leaves the queue
    /// and is answered `cancelled`, as a call in flight would be. False
    /// when no held call (nor `start`) of the connection has that id.
    func cancelHeld(caller connection: ConnectionID, id: MessageID) -> Bool {
        guard let cancellation = activation.cancel(caller: connection, id: id) else { return false }
        var idBytes: ByteBuffer?
        switch cancellation {
        case .heldCall(let call):
            countHeldEnd(call, code: ErrorCode.cancelled.rawValue)
            idBytes = call.request.idBytes
        case .startWaiter(let waiter):
            idBytes = waiter.idBytes
        case .alreadyGone:
            break
        }
        if let idBytes {
            send(connection, writer.error(callerID: idBytes, MediatorError(.cancelled, "the caller cancelled the call"), delivered: .no))
        }
        return true
    }
}
