import MediatorProtocol
import MediatorStatistics
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

// Issue 28, first part: the broker's state as a ``BrokerSnapshot``, and a
// new broker rebuilt from one that routes, answers and expires calls as the
// old one would have.
extension Broker {
    /// The state now, by connection id; times relative to `now`.
    func snapshot(now: NIODeadline) -> BrokerSnapshot {
        let peerSnapshots = peers.map { connection, peer in
            PeerSnapshot(
                connection: connection, credentials: peer.credentials, name: peer.name, targets: peer.targets,
                registeredBytes: peer.registeredBytes, patterns: peer.patterns, consecutiveBadFrames: peer.consecutiveBadFrames,
                askedForDescriptors: peer.askedForDescriptors, passesDescriptors: peer.passesDescriptors)
        }
        let targets = registry.sortedTargets.map { target in
            TargetSnapshot(
                name: target.name, description: target.description, mode: target.mode, actions: target.actions,
                instances: target.instances, nextTurn: target.nextTurn)
        }
        let calls = inFlight.all.map { call in
            CallSnapshot(
                daemonID: call.daemonID, caller: call.caller, callerIDBytes: Array(call.callerIDBytes.readableBytesView),
                callee: call.callee, target: call.target, action: call.action, instance: call.instance, more: call.more,
                timeoutMs: call.timeoutMs, remainingNanoseconds: (call.deadline - now).nanoseconds,
                elapsedNanoseconds: (now - call.startedAt).nanoseconds)
        }
        let actionCounts = statistics.actions.map { counts in
            ActionCounters(
                target: counts.target, action: counts.action, calls: counts.calls, ok: counts.ok, errors: counts.errors,
                timeouts: counts.timeouts, cancels: counts.cancels, callerGone: counts.callerGone, streams: counts.streams,
                partials: counts.partials)
        }
        return BrokerSnapshot(
            uptimeNanoseconds: (now - statisticsStart).nanoseconds,
            peers: peerSnapshots.sorted { $0.connection < $1.connection }, targets: targets,
            nextInstance: registry.nextInstanceNumber, calls: calls, nextCallID: inFlight.nextDaemonID,
            monitors: monitors.filters, queueEpisodes: quotas.queueEpisodes,
            statistics: StatisticsSummary(
                daemon: statistics.daemon, actions: actionCounts, uids: statistics.uids, components: statistics.components),
            activation: activation.snapshot(now: now),
            leftOut: BrokerSnapshot.LeftOut(heldCalls: uncarriedHeldCalls))
    }

    /// Rebuilds the state of `snapshot` in this broker, which has no
    /// connection yet (its policy and manifests are loaded as at any start;
    /// managed components' state is restored for those they describe).
    /// Returns the effects to carry out: the wake-up for the earliest deadline.
    func restore(_ snapshot: BrokerSnapshot, now: NIODeadline) throws(SnapshotError) -> [BrokerEffect] {
        guard peers.isEmpty, registry.targets.isEmpty, inFlight.count == 0 else { throw .brokerNotEmpty }
        try snapshot.checkConsistency()
        // Read before anything changes: a snapshot refused here leaves the broker empty.
        let queues = try ComponentActivation.restoredQueues(snapshot.activation, now: now)
        statisticsStart = now - .nanoseconds(snapshot.uptimeNanoseconds)
        statistics.daemon = snapshot.statistics.daemon
        // In their order, so each action gets the entry it had.
        for counts in snapshot.statistics.actions { statistics.restoreCounts(of: counts) }
        statistics.restoreCounts(uids: snapshot.statistics.uids, components: snapshot.statistics.components)
        for peer in snapshot.peers {
            peers[peer.connection] = Peer(
                credentials: peer.credentials, name: peer.name, callerMember: writer.callerMember(peer.credentials, name: peer.name),
                targets: peer.targets, registeredBytes: peer.registeredBytes, patterns: peer.patterns,
                consecutiveBadFrames: peer.consecutiveBadFrames, askedForDescriptors: peer.askedForDescriptors,
                passesDescriptors: peer.passesDescriptors)
            quotas.admit(peer.connection, uid: peer.credentials.uid)
        }
        registry = Registry(
            restoring: snapshot.targets.map { target in
                Registry.Target(
                    name: target.name, description: target.description, mode: target.mode, actions: target.actions,
                    actionsByName: Registry.byName(target.actions), instances: target.instances, nextTurn: target.nextTurn,
                    remoteCount: target.instances.filter { $0.remoteHost != nil }.count)
            },
            nextInstance: snapshot.nextInstance)
        var calls: [CallsInFlight.Call] = []
        for call in snapshot.calls {
            guard let parsed = try? JSONParser.parse(call.callerIDBytes), let callerID = MessageID(json: parsed) else {
                throw .inconsistent("call \(call.daemonID) has a caller id that is not one")
            }
            var idBytes = writer.allocator.buffer(capacity: call.callerIDBytes.count)
            idBytes.writeBytes(call.callerIDBytes)
            calls.append(CallsInFlight.Call(
                daemonID: call.daemonID, caller: call.caller, callerID: callerID, callerIDBytes: idBytes, callee: call.callee,
                target: call.target, action: call.action, instance: call.instance, more: call.more, timeoutMs: call.timeoutMs,
                deadline: now + .nanoseconds(call.remainingNanoseconds), startedAt: now - .nanoseconds(call.elapsedNanoseconds),
                // The schema and entry it was routed with, found where routing found them.
                resultSchema: registry.target(call.target)?.actionsByName[call.action]?.result,
                statisticsSlot: statistics.slot(target: call.target, action: call.action)))
        }
        inFlight = CallsInFlight(restoring: calls, nextID: snapshot.nextCallID)
        for (connection, filter) in snapshot.monitors { monitors.attach(connection, filter) }
        for (uid, episode) in snapshot.queueEpisodes { quotas.restoreEpisode(uid: uid, episode) }
        // Processes of components the manifests read now no longer describe end.
        let restored = activation.restore(snapshot.activation, held: queues.held, startWaiters: queues.startWaiters, now: now)
        for pid in restored.orphans {
            logger.notice("ending a component process whose manifest is gone", metadata: ["pid": "\(pid)"])
            effects.append(.signal(pid: pid, signal: SIGTERM, group: true))
        }
        // Calls that waited for a component the manifests no longer describe are answered.
        carryOut(restored.actions, now: now)
        if let next = inFlight.earliestDeadline { wakeUp(at: next) }
        scheduleComponentWakeUp(now: now)
        // The NATS bridge's connection does not survive the hand-over (it
        // is a client in the old process): its stand-ins go when it closes
        // and come back when the next bridge registers them. Calls to them
        // in between wait for that, as after a crash.
        let standIns = Set(snapshot.targets.filter { $0.instances.contains { $0.remoteHost != nil } }.map(\.name))
        if !standIns.isEmpty { openReregistrationHold(now: now, only: standIns) }
        return takeEffects()
    }
}
