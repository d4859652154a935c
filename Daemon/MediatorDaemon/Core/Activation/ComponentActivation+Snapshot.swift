import NIOCore

// Managed components across a re-exec (issue 28): their state as an
// ``ActivationSnapshot``, and back in the successor, whose manifests are
// loaded already.
extension ComponentActivation {
    /// The state now; times relative to `now`. Held calls and `start`
    /// waiters are not in it (the host waits for them before a re-exec).
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
                lastExit: component.lastExit, endedBecause: component.endedBecause, removed: component.removed)
        }
        return ActivationSnapshot(
            components: snapshots, nextSpawnID: nextSpawnID, bootGroups: bootGroups, bootWaiting: bootWaiting.sorted(),
            bootDone: bootDone)
    }

    /// Carries on from `snapshot` for every component the manifests loaded
    /// still describe. Returns the pids of processes whose component they
    /// no longer describe: the daemon started them, and ends them.
    mutating func restore(_ snapshot: ActivationSnapshot, now: NIODeadline) -> [Int32] {
        nextSpawnID = max(nextSpawnID, snapshot.nextSpawnID)
        bootGroups = snapshot.bootGroups.map { $0.filter { components[$0] != nil } }.filter { !$0.isEmpty }
        bootWaiting = Set(snapshot.bootWaiting.filter { components[$0] != nil })
        bootDone = snapshot.bootDone
        var orphans: [Int32] = []
        for saved in snapshot.components {
            guard var component = components[saved.target] else {
                orphans += saved.processes.compactMap(\.pid)
                continue
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
        return orphans
    }
}
