import Logging
import MediatorProtocol
import NIOCore

/// The broker's side of ``ReregistrationHold``: after a crash, a call to a
/// target nobody has registered yet waits (up to `reregister_hold_ms`) for
/// the component to register again instead of failing `target_not_found`;
/// after a hand-over, a call to a target the NATS bridge's stand-ins served.
extension Broker {
    /// Opens the window from `now`, when the setting allows one, for
    /// `targets` only or (nil) for every target not registered.
    func openReregistrationHold(now: NIODeadline, only targets: Set<String>? = nil) {
        guard configuration.reregisterHoldMs > 0 else { return }
        let end = now + .milliseconds(configuration.reregisterHoldMs)
        reregistrationHold.open(until: end, only: targets)
        wakeUp(at: end)
    }

    /// Whether a call to a target that is not registered was held for it to come back.
    func holdUntilReregistered(_ request: RouteRequest, from connection: ConnectionID, now: NIODeadline) -> Bool {
        guard reregistrationHold.holds(request.target, at: now) else { return false }
        switch heldCall(request, from: connection, now: now) {
        case .failure(let refusal):
            refuse(request, from: connection, refusal, now: now)
        case .success(let held):
            reregistrationHold.hold(held)
            if let deadline = held.deadline { wakeUp(at: deadline) }
            logger.debug("call held until its target registers again", metadata: ["target": "\(request.target)", "action": "\(request.action)"])
        }
        return true
    }

    /// `target` registered again: its held calls go out, in arrival order.
    func releaseReregistrationHold(_ target: String, now: NIODeadline) {
        for call in reregistrationHold.release(target) {
            guard peers[call.caller] != nil else {
                if let descriptors = call.request.descriptors { release(descriptors) }
                continue
            }
            route(call.request, from: call.caller, now: now)
        }
    }

    /// Held calls whose timeout passed are answered `timeout`; at the
    /// window's end every call still held is answered as it would have
    /// been at once: `target_not_found`.
    func expireReregistrationHold(now: NIODeadline) {
        guard reregistrationHold.windowEnd != nil else { return }
        let (timedOut, unclaimed) = reregistrationHold.expire(now: now)
        for call in timedOut {
            answerHeld(call, MediatorError(.timeout, "\"\(call.request.target)\" did not register again within the call's timeout"), now: now)
        }
        for call in unclaimed { answerHeld(call, targetNotFound(call.request.target), now: now) }
        if !unclaimed.isEmpty {
            logger.info("held calls answered: their targets did not register again in time", metadata: ["calls": "\(unclaimed.count)"])
        }
        if let next = reregistrationHold.nextWakeUp { wakeUp(at: next) }
    }

    /// Answers every held call with `error` and closes the window: for a stop or a re-exec.
    func failReregistrationHold(_ error: MediatorError, now: NIODeadline) {
        for call in reregistrationHold.takeAll() { answerHeld(call, error, now: now) }
        reregistrationHold.close()
    }

    /// `cancel` of a held call: answered `cancelled`. False when none has that id.
    func cancelReregistrationHeld(caller connection: ConnectionID, id: MessageID, now: NIODeadline) -> Bool {
        guard !reregistrationHold.isEmpty, let call = reregistrationHold.cancel(caller: connection, id: id) else { return false }
        answerHeld(call, MediatorError(.cancelled, "the caller cancelled the call"), now: now)
        return true
    }

    /// A connection closed: its held calls close what they carried.
    func dropReregistrationHeld(from connection: ConnectionID) {
        for call in reregistrationHold.drop(from: connection) {
            if let descriptors = call.request.descriptors { release(descriptors) }
        }
    }

    /// Answers one held call (closing what it carried), unless its caller left.
    private func answerHeld(_ call: ManagedComponent.HeldCall, _ error: MediatorError, now: NIODeadline) {
        guard peers[call.caller] != nil else {
            if let descriptors = call.request.descriptors { release(descriptors) }
            return
        }
        refuse(call.request, from: call.caller, error, now: now)
    }
}
