import MediatorConfiguration
import MediatorProtocol
import NIOCore

// Calls held while a component starts, and `start` calls waiting for one
// to register: their queues, in arrival order, and their index by caller.
extension ComponentActivation {
    /// Queues a call for a component that is not running (the broker has
    /// checked it against the manifest and the limits), starting the
    /// component if nothing is under way.
    mutating func hold(_ call: ManagedComponent.HeldCall, now: NIODeadline, registry: Registry) -> [Action] {
        let target = call.request.target
        guard let state = components[target]?.state else { return [] }
        components[target]?.held.append(call)
        heldCalls.add(caller: call.caller, id: call.request.id, bytes: call.bytes, target: target)
        var actions: [Action] = []
        if state == .activatable { start(target, now, registry, &actions) }
        scheduleWakeUp(now, registry, &actions)
        return actions
    }

    /// `start` of a managed component that is not running: a failed one is
    /// tried again; the waiter is answered once it registers.
    mutating func requestStart(_ target: String, waiter: StartWaiter, now: NIODeadline, registry: Registry) -> [Action] {
        guard components[target] != nil else { return [] }
        if components[target]?.state == .failed {
            components[target]?.state = .activatable
            components[target]?.consecutiveRestarts = 0
        }
        startWaiters[target, default: []].append(waiter)
        heldCalls.add(caller: waiter.connection, id: waiter.id, bytes: waiter.bytes, target: target)
        var actions: [Action] = []
        if components[target]?.state == .activatable { start(target, now, registry, &actions) }
        return actions
    }

    /// A ``Action/deliver(_:)``ed call is being forwarded: it no longer counts as held.
    mutating func forwarding(_ call: ManagedComponent.HeldCall) {
        heldCalls.remove(caller: call.caller, id: call.request.id, bytes: call.bytes)
    }

    /// Takes out of the queues a held call (or `start`) of the connection
    /// with this id, for `cancel`; nil when none has it.
    mutating func cancel(caller connection: ConnectionID, id: MessageID) -> Cancellation? {
        guard let target = heldCalls.target(caller: connection, id: id) else { return nil }
        if let index = components[target]?.held.firstIndex(where: { $0.caller == connection && $0.request.id == id }),
            let call = components[target]?.held.remove(at: index)
        {
            heldCalls.remove(caller: connection, id: id, bytes: call.bytes)
            return .heldCall(call)
        }
        if let index = startWaiters[target]?.firstIndex(where: { $0.connection == connection && $0.id == id }),
            let waiter = startWaiters[target]?.remove(at: index)
        {
            heldCalls.remove(caller: connection, id: id, bytes: waiter.bytes)
            return .startWaiter(waiter)
        }
        return .alreadyGone
    }

    /// A connection closed: its `start`s and held calls go; returns the held calls, in queue order.
    mutating func dropHeld(from connection: ConnectionID) -> [ManagedComponent.HeldCall] {
        for target in startWaiters.keys {
            startWaiters[target]?.removeAll { $0.connection == connection }
        }
        var dropped: [ManagedComponent.HeldCall] = []
        for target in components.keys {
            components[target]?.held.removeAll { call in
                guard call.caller == connection else { return false }
                dropped.append(call)
                return true
            }
        }
        heldCalls.forget(connection)
        return dropped
    }

    /// The held calls `failing` picks, of every target, fail with `error`
    /// (those a hand-over's snapshot cannot carry); `start`s stay.
    mutating func failHeld(where failing: (ManagedComponent.HeldCall) -> Bool, _ error: MediatorError) -> [Action] {
        var actions: [Action] = []
        for target in components.keys.sorted() {
            guard let held = components[target]?.held, held.contains(where: failing) else { continue }
            components[target]?.held = held.filter { !failing($0) }
            for call in held where failing(call) {
                heldCalls.remove(caller: call.caller, id: call.request.id, bytes: call.bytes)
                actions.append(.heldFailed(call, error))
            }
        }
        return actions
    }

    /// Every `start` and held call for the target fails with `error`.
    mutating func failHeld(_ target: String, _ error: MediatorError, _ actions: inout [Action]) {
        for waiter in startWaiters.removeValue(forKey: target) ?? [] {
            heldCalls.remove(caller: waiter.connection, id: waiter.id, bytes: waiter.bytes)
            actions.append(.startRefused(waiter, error))
        }
        guard let held = components[target]?.held else { return }
        components[target]?.held = []
        for call in held {
            heldCalls.remove(caller: call.caller, id: call.request.id, bytes: call.bytes)
            actions.append(.heldFailed(call, error))
        }
    }
}
