import MediatorConfiguration
import MediatorProtocol

/// Which connections serve which targets: the registered targets, their
/// action specs and their instances.
package struct Registry: Sendable {
    package typealias Mode = TargetMode

    package struct Instance: Sendable, Equatable {
        package var instance: Int
        package var connection: ConnectionID
        package var credentials: PeerCredentials
        package var name: String?
        package var inFlight = 0
        /// The host this instance stands in for: registered by the daemon's
        /// own NATS bridge for a target served elsewhere. Such an instance
        /// gets calls only when no local one is registered.
        package var remoteHost: String?
    }

    package struct Target: Sendable {
        package var name: String
        package var description: String?
        package var mode: Mode
        /// Action specs in registration order, and by name for routing.
        package var actions: [ActionSpec]
        var actionsByName: [String: ActionSpec]
        package var instances: [Instance]
        /// Where the round robin among equally loaded instances goes next.
        var nextTurn = 0
        /// How many of `instances` stand in for other hosts.
        var remoteCount = 0
        /// Each routed action's entry in the broker's statistics, found once:
        /// a lookup by action name here is cheaper than by target and action there.
        var statisticsSlots: [String: Int] = [:]
        /// The last action routed here and its slot: a caller that calls
        /// one action over and over compares its name instead of hashing it.
        /// Reset with `statisticsSlots`.
        var lastStatisticsSlot: (action: String, slot: Int)?
        /// Where the spec of the last action called by its own name (not
        /// through `notFound`) is in `actionsByName`, for the same reason:
        /// a position, not the spec, which would be copied in and out.
        /// Valid while `actionsByName` is not replaced (it is reset then)
        /// and in copies of the target (a copy keeps the positions).
        var lastSpecSlot: (action: String, slot: [String: ActionSpec].Index)?

        /// Where the spec of the action named `name` is, comparing the name
        /// with the last one found before hashing it; nil when none is declared.
        mutating func specSlot(_ name: String) -> [String: ActionSpec].Index? {
            if let last = lastSpecSlot, last.action == name { return last.slot }
            guard let found = actionsByName.index(forKey: name) else { return nil }
            lastSpecSlot = (name, found)
            return found
        }

        /// What routing reads of the spec of the action named `name`, read
        /// where the spec is stored: a copy of the spec (the dictionary's
        /// getter) retains and releases each of its strings and schemas.
        mutating func routingFacts(_ name: String) -> ActionSpec.RoutingFacts? {
            guard let slot = specSlot(name) else { return nil }
            func read(_ spec: inout ActionSpec) -> ActionSpec.RoutingFacts { spec.routingFacts }
            return read(&actionsByName.values[slot])
        }

        /// The specs as a set, which every instance of a pool must declare.
        var specSet: Set<ActionSpec> { Set(actions) }

        /// The index of the instance to send the next call to: the fewest
        /// calls in flight, ties taken in turn; nil when there is none.
        mutating func pickInstance() -> Int? {
            let count = instances.count
            guard count > 0 else { return nil }
            // Local instances first; remote stand-ins only when none is local.
            let onlyLocal = remoteCount > 0 && remoteCount < count
            var best = nextTurn % count
            if onlyLocal {
                guard let firstLocal = (0..<count).map({ (nextTurn + $0) % count }).first(where: { instances[$0].remoteHost == nil })
                else { return nil }
                best = firstLocal
            }
            if count > 1 {
                for step in 1..<count {
                    let index = (nextTurn + step) % count
                    if onlyLocal && instances[index].remoteHost != nil { continue }
                    if instances[index].inFlight < instances[best].inFlight { best = index }
                }
            }
            nextTurn = (best + 1) % count
            return best
        }
    }

    package private(set) var targets: [String: Target] = [:]
    private var nextInstance = 1
    /// Where the last target `withTarget` found is stored, and its name: a
    /// call's route and its answer each find the same target, and comparing
    /// a name is cheaper than hashing it. Valid while `targets` gains or
    /// loses no entry, and in a copy of the registry (a copy keeps the
    /// dictionary's positions); every insertion or removal below clears it
    /// (`targets` is set only in this file). Not a `didSet`: that would run
    /// on every change made in place, a call's count included.
    private var lastFound: (name: String, slot: [String: Target].Index)?

    package init() {}

    /// A registry as a snapshot left it (Core/Snapshot): its targets with
    /// their instances and turns, and the next instance number.
    init(restoring targets: [Target], nextInstance: Int) {
        self.targets = Dictionary(targets.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.nextInstance = nextInstance
    }

    /// The number the next registered instance gets, for a snapshot.
    var nextInstanceNumber: Int { nextInstance }

    package func target(_ name: String) -> Target? { targets[name] }

    package mutating func register(
        target name: String, actions: [ActionSpec], mode: Mode, description: String?,
        connection: ConnectionID, credentials: PeerCredentials, peerName: String?, remoteHost: String? = nil
    ) throws(MediatorError) -> Int {
        var instance = Instance(instance: nextInstance, connection: connection, credentials: credentials, name: peerName)
        instance.remoteHost = remoteHost
        if let slot = targets.index(forKey: name) {
            // Joined where it is stored: a copy of the target would copy its
            // instances, making each join cost as much as the pool is large.
            let allRemote = targets.values[slot].remoteCount == targets.values[slot].instances.count
            if remoteHost != nil {
                // A stand-in joins whatever is there, as a fallback.
                targets.values[slot].remoteCount += 1
            } else if allRemote {
                // The first local instance defines the target; the stand-ins stay behind it.
                targets.values[slot].mode = mode
                targets.values[slot].description = description
                targets.values[slot].actions = actions
                targets.values[slot].actionsByName = Self.byName(actions)
                targets.values[slot].statisticsSlots = [:]
                targets.values[slot].lastStatisticsSlot = nil
                targets.values[slot].lastSpecSlot = nil
            } else {
                let existingMode = targets.values[slot].mode
                guard mode == .pool, existingMode == .pool else {
                    throw MediatorError(.alreadyRegistered, "target \"\(name)\" is already registered" + (mode == .pool ? " in exclusive mode" : ""))
                }
                // Specs are compared as sets: the order of declaration does not matter.
                guard targets.values[slot].specSet == Set(actions) else {
                    throw MediatorError(.alreadyRegistered, "pool \"\(name)\" has different action specs")
                }
            }
            targets.values[slot].instances.append(instance)
        } else {
            lastFound = nil
            targets[name] = Target(
                name: name, description: description, mode: mode, actions: actions, actionsByName: Self.byName(actions),
                instances: [instance], remoteCount: remoteHost == nil ? 0 : 1)
        }
        nextInstance += 1
        return instance.instance
    }

    static func byName(_ actions: [ActionSpec]) -> [String: ActionSpec] {
        var byName: [String: ActionSpec] = [:]
        for spec in actions { byName[spec.name] = spec }
        return byName
    }

    /// Removes the instances of `name` that `connection` registered.
    package mutating func unregister(target name: String, connection: ConnectionID) throws(MediatorError) -> [Instance] {
        guard let slot = targets.index(forKey: name) else {
            throw MediatorError(.targetNotFound, "no component serves target \"\(name)\"")
        }
        // In place, as a join is: no copy of the pool's instances.
        let removed = targets.values[slot].instances.filter { $0.connection == connection }
        guard !removed.isEmpty else {
            throw MediatorError(.forbidden, "target \"\(name)\" was registered by another connection")
        }
        targets.values[slot].instances.removeAll { $0.connection == connection }
        targets.values[slot].remoteCount -= removed.filter { $0.remoteHost != nil }.count
        if targets.values[slot].instances.isEmpty {
            lastFound = nil
            targets.remove(at: slot)
        }
        return removed
    }

    /// Removes every instance a closed connection had; returns them by target.
    mutating func removeConnection(_ connection: ConnectionID, targets names: Set<String>) -> [(target: String, instance: Instance)] {
        var removed: [(String, Instance)] = []
        for name in names.sorted() {
            if let instances = try? unregister(target: name, connection: connection) {
                removed += instances.map { (name, $0) }
            }
        }
        return removed
    }

    /// A connection said its name in `hello` after registering.
    mutating func rename(connection: ConnectionID, targets names: Set<String>, to name: String) {
        for target in names {
            guard var entry = targets[target] else { continue }
            for index in entry.instances.indices where entry.instances[index].connection == connection {
                entry.instances[index].name = name
            }
            lastFound = nil
            targets[target] = entry
        }
    }

    /// The instance to send the next call to: the fewest calls in flight,
    /// ties taken in turn.
    mutating func pickInstance(of name: String) -> Instance? {
        withTarget(name) { target in target.pickInstance().map { target.instances[$0] } } ?? nil
    }

    /// Counts a call in flight on an instance (delta +1 or -1).
    mutating func adjustInFlight(target name: String, instance: Int, by delta: Int) {
        _ = withTarget(name) { target in
            if let index = target.instances.firstIndex(where: { $0.instance == instance }) {
                target.instances[index].inFlight += delta
            }
        }
    }

    /// Runs `body` on the target named `name` where it is stored: one hash
    /// of the name, and no copy of the target (a dictionary's getter copies
    /// the whole value, arrays and dictionaries retained and released).
    /// nil when no such target is registered.
    @inline(__always)
    mutating func withTarget<Result>(_ name: String, _ body: (inout Target) -> Result) -> Result? {
        let slot: [String: Target].Index
        if let last = lastFound, last.name == name {
            slot = last.slot
        } else {
            guard let found = targets.index(forKey: name) else { return nil }
            slot = found
            lastFound = (name, found)
        }
        return body(&targets.values[slot])
    }

    /// Registered targets sorted by name, byte by byte.
    var sortedTargets: [Target] {
        targets.values.sorted { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
    }
}
