import NIOCore

/// After a crash (issue 28): the component processes the crashed daemon
/// had started run on (KillMode=process), kept in the fd store with their
/// pidfds and pipes, but no snapshot says which manifest each belongs to.
/// A process claims its component by registering, again, a target a
/// manifest describes, from a connection whose peer pid (SO_PEERCRED) is
/// its own: it becomes that component's running instance, supervised as
/// after a restart. Those nobody claims by the deadline are ended.
struct ComponentAdoption {
    /// The stored processes not claimed yet: spawn id by pid.
    private(set) var unclaimed: [Int32: Int] = [:]
    /// When the unclaimed ones are ended; nil when no adoption is under way.
    private(set) var deadline: NIODeadline?

    /// Starts of exec components wait meanwhile: a call to a component
    /// about to register again would otherwise start a second instance
    /// beside it, and the stored one would be ended.
    var defersStarts: Bool { deadline != nil }

    init() {}

    init(_ stored: [(spawnID: Int, pid: Int32)], until deadline: NIODeadline) {
        for process in stored where process.pid > 0 { unclaimed[process.pid] = process.spawnID }
        self.deadline = unclaimed.isEmpty ? nil : deadline
    }

    mutating func claim(pid: Int32) -> Int? { unclaimed.removeValue(forKey: pid) }
}

extension ComponentActivation {
    /// A stored process a registration claimed, for the host to watch.
    struct AdoptedProcess: Equatable {
        var target: String
        var spawnID: Int
        var pid: Int32
    }

    /// The host found `stored` in the fd store after a crash: each may
    /// claim its component until `deadline`. New spawn ids go above theirs,
    /// since a spawn id names a process's entries in the store.
    mutating func awaitAdoption(of stored: [(spawnID: Int, pid: Int32)], until deadline: NIODeadline) {
        nextSpawnID = max(nextSpawnID, stored.map(\.spawnID).max() ?? 0)
        adoption = ComponentAdoption(stored, until: deadline)
    }

    /// A connection of process `pid` is registering `target`: when `pid` is
    /// an unclaimed stored process and `target`'s manifest starts processes
    /// (exec) and has room for one more, that process is the component's
    /// now (``registered(_:pid:now:)``, which follows, makes it running).
    mutating func claim(_ target: String, pid: Int32, now: NIODeadline) -> AdoptedProcess? {
        guard adoption.unclaimed[pid] != nil, let component = components[target], !component.removed,
            case .exec = component.manifest.launch, component.state == .activatable || component.state == .running,
            component.processes.count < component.manifest.instances, !component.processes.contains(where: { $0.pid == pid }),
            let spawnID = adoption.claim(pid: pid)
        else { return nil }
        // Its real start is not known: its age counts from now (the steady-run reset, `status`).
        components[target]?.processes.append(ManagedComponent.Process(spawnID: spawnID, pid: pid, startedAt: now))
        return AdoptedProcess(target: target, spawnID: spawnID, pid: pid)
    }

    /// Once every stored process is claimed, or at the deadline: the
    /// adoption ends, the spawn ids of the unclaimed ones come back (to
    /// end), and the starts that waited happen (components with calls or a
    /// `start` waiting, at-boot ones whose turn came).
    mutating func settleAdoption(now: NIODeadline, registry: Registry) -> (unclaimed: [Int], actions: [Action]) {
        guard let deadline = adoption.deadline, adoption.unclaimed.isEmpty || deadline <= now else { return ([], []) }
        let unclaimed = adoption.unclaimed.values.sorted()
        adoption = ComponentAdoption()
        var actions: [Action] = []
        for target in components.keys.sorted()
        where components[target]?.state == .activatable && (hasWaiters(target) || bootWaiting.contains(target)) {
            start(target, now, registry, &actions)
        }
        return (unclaimed, actions)
    }
}
