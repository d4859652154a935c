import MediatorProtocol
import NIOCore

// Managed components across a re-exec (issue 28): their state as an
// ``ActivationSnapshot``, and back in the successor, whose manifests are
// loaded already.
extension ComponentActivation {
    /// The state now; times relative to `now`. Held calls a snapshot
    /// cannot carry (``ManagedComponent/HeldCall/isCarried``) are left
    /// out: the host answers them before it hands over.
    func snapshot(now: NIODeadline) -> ActivationSnapshot {
        let snapshots = components.values.sorted { $0.manifest.target < $1.manifest.target }.map { component in
            ActivationSnapshot.Component(
                target: component.manifest.target, state: component.state,
                processes: component.processes.map {
                    ActivationSnapshot.Process(
                        spawnID: $0.spawnID, pid: $0.pid, ageNanoseconds: (now - $0.startedAt).nanoseconds, registered: $0.registered)
                },
                startDeadlineIn: component.startDeadline.map { ($0 - now).nanoseconds },
                restartIn: component.restartAt.map { ($0 - now).nanoseconds },
                termIn: component.termAt.map { ($0 - now).nanoseconds },
                lastActivityAgo: component.lastActivity.map { (now - $0).nanoseconds },
                runningSinceAgo: component.runningSince.map { (now - $0).nanoseconds },
                consecutiveRestarts: component.consecutiveRestarts, restarts: component.restarts,
                lastExit: component.lastExit, endedBecause: component.endedBecause, removed: component.removed,
                held: component.held.filter(\.isCarried).map { $0.snapshot(now: now) })
        }
        let waiters = startWaiters.keys.sorted().flatMap { target in
            (startWaiters[target] ?? []).map {
                StartWaiterSnapshot(connection: $0.connection, target: target, callerID: $0.idBytes.map { String(buffer: $0) })
            }
        }
        return ActivationSnapshot(
            components: snapshots, nextSpawnID: nextSpawnID, bootGroups: bootGroups, bootWaiting: bootWaiting.sorted(),
            bootDone: bootDone, startWaiters: waiters)
    }

    /// Held calls and `start` waiters of a snapshot, rebuilt as they were
    /// queued, by target, before anything of the broker is restored (a
    /// caller id that does not parse refuses the whole snapshot).
    static func restoredQueues(_ snapshot: ActivationSnapshot, now: NIODeadline) throws(SnapshotError)
        -> (held: [String: [ManagedComponent.HeldCall]], startWaiters: [String: [StartWaiter]])
    {
        var held: [String: [ManagedComponent.HeldCall]] = [:]
        for component in snapshot.components where !component.held.isEmpty {
            var calls: [ManagedComponent.HeldCall] = []
            for call in component.held { calls.append(try ManagedComponent.HeldCall(restoring: call, now: now)) }
            held[component.target] = calls
        }
        var waiters: [String: [StartWaiter]] = [:]
        for waiter in snapshot.startWaiters {
            let id = try waiter.callerID.map { text throws(SnapshotError) in try restoredID(text) }
            waiters[waiter.target, default: []].append(StartWaiter(
                connection: waiter.connection, id: id?.id, idBytes: id?.bytes))
        }
        return (held, waiters)
    }

    /// Carries on from `snapshot` for every component the manifests loaded
    /// still describe, with its held calls and `start` waiters (from
    /// ``restoredQueues(_:now:)``). Returns the pids of processes whose
    /// component they no longer describe (the daemon started them, and
    /// ends them), and the answers for the calls and `start`s that waited
    /// for one.
    mutating func restore(
        _ snapshot: ActivationSnapshot, held: [String: [ManagedComponent.HeldCall]], startWaiters waiters: [String: [StartWaiter]],
        now: NIODeadline
    ) -> (orphans: [Int32], actions: [Action]) {
        nextSpawnID = max(nextSpawnID, snapshot.nextSpawnID)
        bootGroups = snapshot.bootGroups.map { $0.filter { components[$0] != nil } }.filter { !$0.isEmpty }
        bootWaiting = Set(snapshot.bootWaiting.filter { components[$0] != nil })
        bootDone = snapshot.bootDone
        var orphans: [Int32] = []
        var actions: [Action] = []
        for (target, queued) in waiters {
            guard components[target] != nil else {
                for waiter in queued {
                    actions.append(.startRefused(waiter, MediatorError(.targetNotFound, "no component serves target \"\(target)\"")))
                }
                continue
            }
            startWaiters[target, default: []] += queued
            for waiter in queued { heldCalls.add(caller: waiter.connection, id: waiter.id, bytes: waiter.bytes, target: target) }
        }
        for saved in snapshot.components {
            guard var component = components[saved.target] else {
                orphans += saved.processes.compactMap(\.pid)
                for call in held[saved.target] ?? [] {
                    actions.append(.heldFailed(call, MediatorError(.targetNotFound, "no component serves target \"\(saved.target)\"")))
                }
                continue
            }
            component.held = held[saved.target] ?? []
            for call in component.held {
                heldCalls.add(caller: call.caller, id: call.request.id, bytes: call.bytes, target: saved.target)
            }
            func at(_ offset: Int64?) -> NIODeadline? { offset.map { now + .nanoseconds($0) } }
            func ago(_ offset: Int64?) -> NIODeadline? { offset.map { now - .nanoseconds($0) } }
            component.state = saved.state
            component.processes = saved.processes.map {
                ManagedComponent.Process(
                    spawnID: $0.spawnID, pid: $0.pid, startedAt: now - .nanoseconds($0.ageNanoseconds), registered: $0.registered)
            }
            component.startDeadline = at(saved.startDeadlineIn)
            component.restartAt = at(saved.restartIn)
            component.termAt = at(saved.termIn)
            component.lastActivity = ago(saved.lastActivityAgo)
            component.runningSince = ago(saved.runningSinceAgo)
            component.consecutiveRestarts = saved.consecutiveRestarts
            component.restarts = saved.restarts
            component.lastExit = saved.lastExit
            component.endedBecause = saved.endedBecause
            // `removed` stays as the files read now say.
            components[saved.target] = component
        }
        return (orphans, actions)
    }
}

/// A caller's id kept as JSON text, as the id and the bytes echoed on its answer.
private func restoredID(_ text: String) throws(SnapshotError) -> (id: MessageID, bytes: ByteBuffer) {
    guard let parsed = try? JSONParser.parse(Array(text.utf8)), let id = MessageID(json: parsed) else {
        throw .inconsistent("a held call or start has a caller id that is not one")
    }
    return (id, ByteBuffer(string: text))
}

extension ManagedComponent.HeldCall {
    /// As a snapshot keeps it; times relative to `now`.
    func snapshot(now: NIODeadline) -> HeldCallSnapshot {
        func text(_ buffer: ByteBuffer?) -> String? { buffer.map { String(buffer: $0) } }
        return HeldCallSnapshot(
            caller: caller, target: request.target, action: request.action, params: text(request.params),
            callerID: text(request.idBytes), timeoutMs: request.timeoutMs, remainingNanoseconds: deadline.map { ($0 - now).nanoseconds },
            more: request.more, viaURL: request.viaURL, traceparent: text(request.trace?.traceparent),
            tracestate: text(request.trace?.tracestate))
    }

    /// The call again, its deadline as far off as it was, its bytes counted
    /// as ``Broker/heldCall(_:from:now:)`` counts them.
    init(restoring saved: HeldCallSnapshot, now: NIODeadline) throws(SnapshotError) {
        let restored = try saved.callerID.map { text throws(SnapshotError) in try restoredID(text) }
        let id = restored?.id
        let idBytes = restored?.bytes
        guard (id == nil) == (saved.remainingNanoseconds == nil) else {
            throw .inconsistent("a held call has a deadline without an id, or an id without a deadline")
        }
        let trace = saved.traceparent.map {
            ForwardedTrace(traceparent: ByteBuffer(string: $0), tracestate: saved.tracestate.map { ByteBuffer(string: $0) })
        }
        let request = Broker.RouteRequest(
            target: saved.target, action: saved.action, params: saved.params.map { ByteBuffer(string: $0) }, id: id,
            idBytes: idBytes, timeoutMs: saved.timeoutMs, more: saved.more, viaURL: saved.viaURL, trace: trace)
        self.init(
            caller: saved.caller, request: request, deadline: saved.remainingNanoseconds.map { now + .nanoseconds($0) },
            bytes: (request.params?.readableBytes ?? 0) + (idBytes?.readableBytes ?? 0) + (trace?.lineBytes ?? 0))
    }
}
