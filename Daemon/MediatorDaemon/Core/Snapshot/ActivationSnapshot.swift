import MediatorProtocol

/// The managed components' state in a ``BrokerSnapshot`` (issue 28: they
/// survive a re-exec): per component what it is doing, its processes and
/// its deadlines, and the spawn ids and at-boot groups. Times are relative
/// to the snapshot's moment. The manifests themselves are not in it: the
/// successor reads them, and restores the state of the components they
/// still describe. Calls held for a starting component and `start` calls
/// waiting for one are in it (``HeldCallSnapshot``), except those a
/// snapshot cannot carry, which the host waits for or answers first
/// (docs/daemon.md).
struct ActivationSnapshot: Equatable, Sendable {
    struct Process: Equatable, Sendable {
        var spawnID: Int
        var pid: Int32?
        /// Since it was started.
        var ageNanoseconds: Int64
        var registered: Bool
    }

    struct Component: Equatable, Sendable {
        var target: String
        var state: ManagedComponent.State
        var processes: [Process]
        /// From the snapshot's moment until each deadline.
        var startDeadlineIn: Int64?
        var restartIn: Int64?
        var termIn: Int64?
        /// From each moment until the snapshot's.
        var lastActivityAgo: Int64?
        var runningSinceAgo: Int64?
        var consecutiveRestarts: Int
        var restarts: Int
        var lastExit: String?
        var endedBecause: String?
        var removed: Bool
        /// Calls waiting for it to register, in arrival order.
        var held: [HeldCallSnapshot] = []
    }

    var components: [Component]
    var nextSpawnID: Int
    var bootGroups: [[String]]
    var bootWaiting: [String]
    var bootDone: Bool
    /// `start` calls waiting for their component to register, in arrival order per target.
    var startWaiters: [StartWaiterSnapshot] = []

    static let empty = ActivationSnapshot(components: [], nextSpawnID: 0, bootGroups: [], bootWaiting: [], bootDone: false)
}

extension ActivationSnapshot {
    var json: JSONValue {
        .object([
            "components": .array(components.map(\.json)), "next_spawn_id": .count(nextSpawnID),
            "boot_groups": .array(bootGroups.map { .names($0) }), "boot_waiting": .names(bootWaiting),
            "boot_done": .bool(bootDone), "start_waiters": .array(startWaiters.map(\.json)),
        ])
    }

    /// `version` 2 has no held calls nor `start` waiters.
    init(snapshot members: SnapshotMembers, version: Int64 = BrokerSnapshot.currentVersion) throws(SnapshotError) {
        var components: [Component] = []
        for component in try members.objects("components") { components.append(try Component(snapshot: component, version: version)) }
        var groups: [[String]] = []
        for item in try members.items("boot_groups") {
            guard let names = item.value.arrayValue?.compactMap(\.stringValue), names.count == item.value.arrayValue?.count else {
                throw .malformed(path: item.path, expected: "an array of strings")
            }
            groups.append(names)
        }
        var waiters: [StartWaiterSnapshot] = []
        for waiter in try version < 3 ? [] : members.objects("start_waiters") { waiters.append(try StartWaiterSnapshot(snapshot: waiter)) }
        self.init(
            components: components, nextSpawnID: try members.integer("next_spawn_id"), bootGroups: groups,
            bootWaiting: try members.strings("boot_waiting"), bootDone: try members.bool("boot_done"), startWaiters: waiters)
    }
}

extension ActivationSnapshot.Component {
    var json: JSONValue {
        var members: [String: JSONValue] = [
            "target": .string(target), "state": .string(state.rawValue),
            "processes": .array(processes.map { process in
                var members: [String: JSONValue] = [
                    "spawn_id": .count(process.spawnID), "age_ns": .int(process.ageNanoseconds), "registered": .bool(process.registered),
                ]
                if let pid = process.pid { members["pid"] = .count(pid) }
                return .object(members)
            }),
            "consecutive_restarts": .count(consecutiveRestarts), "restarts": .count(restarts), "removed": .bool(removed),
            "held": .array(held.map(\.json)),
        ]
        let optional: [(String, JSONValue?)] = [
            ("start_deadline_in_ns", startDeadlineIn.map(JSONValue.int)), ("restart_in_ns", restartIn.map(JSONValue.int)),
            ("term_in_ns", termIn.map(JSONValue.int)), ("last_activity_ago_ns", lastActivityAgo.map(JSONValue.int)),
            ("running_since_ago_ns", runningSinceAgo.map(JSONValue.int)), ("last_exit", lastExit.map(JSONValue.string)),
            ("ended_because", endedBecause.map(JSONValue.string)),
        ]
        for case let (key, value?) in optional { members[key] = value }
        return .object(members)
    }

    init(snapshot members: SnapshotMembers, version: Int64) throws(SnapshotError) {
        let stateName = try members.string("state")
        guard let state = ManagedComponent.State(rawValue: stateName) else {
            throw .malformed(path: members.at("state"), expected: "a component state")
        }
        var processes: [ActivationSnapshot.Process] = []
        for process in try members.objects("processes") {
            processes.append(ActivationSnapshot.Process(
                spawnID: try process.integer("spawn_id"),
                pid: process.members["pid"] == nil ? nil : try process.integer("pid"),
                ageNanoseconds: try process.integer("age_ns"), registered: try process.bool("registered")))
        }
        func optionalInteger(_ key: String) throws(SnapshotError) -> Int64? {
            members.members[key] == nil ? nil : try members.integer(key)
        }
        var held: [HeldCallSnapshot] = []
        for call in try version < 3 ? [] : members.objects("held") { held.append(try HeldCallSnapshot(snapshot: call)) }
        self.init(
            target: try members.string("target"), state: state, processes: processes,
            startDeadlineIn: try optionalInteger("start_deadline_in_ns"), restartIn: try optionalInteger("restart_in_ns"),
            termIn: try optionalInteger("term_in_ns"), lastActivityAgo: try optionalInteger("last_activity_ago_ns"),
            runningSinceAgo: try optionalInteger("running_since_ago_ns"),
            consecutiveRestarts: try members.integer("consecutive_restarts"), restarts: try members.integer("restarts"),
            lastExit: try members.optionalString("last_exit"), endedBecause: try members.optionalString("ended_because"),
            removed: try members.bool("removed"), held: held)
    }
}
