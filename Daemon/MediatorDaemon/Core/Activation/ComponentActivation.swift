import MediatorConfiguration
import MediatorProtocol
import MediatorStatistics
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Components started on demand (contract section 4, step 5), as one part
/// that owns its state: the managed components and their processes, spawn
/// ids, the at-boot groups still to start, the `start` calls and calls held
/// until a component registers, and the index of those by caller.
///
/// Pure, in the manner of a state machine that returns actions: time, the
/// registry (which targets are registered, by which instances) and the
/// configuration values come in as arguments; it logs nothing, counts
/// nothing and sends nothing, but answers with the ``Action``s that the
/// broker turns, in order, into log lines, statistics, frames and effects
/// (Broker+Activation.swift).
struct ComponentActivation {
    /// What activation decided, in the order the broker carries it out.
    enum Action {
        /// The manifests were (re)loaded: `count` components are described.
        case manifestsLoaded(count: Int)
        /// An at-boot component's group is due: it starts now.
        case bootStarting(String)
        /// A component is being started (for the statistics).
        case activated(String)
        case spawn(SpawnOrder)
        case startUnit(String, target: String)
        case stopUnit(String)
        case signal(pid: Int32, signal: Int32, group: Bool)
        /// A component is asked to stop: its registered instances get `mediator.stop`.
        case stopping(String, reason: String)
        /// A process the daemon started ended (pid 0 when it never reported one).
        case processEnded(String, pid: Int32, end: ProcessEnd)
        case startFailed(String, ComponentCounters.StartFailure)
        /// A replacement for an ended process is scheduled.
        case restartScheduled(String)
        /// The component failed `failures` times in a row: it is not started again by itself.
        case gaveUp(String, failures: Int)
        /// A running component was idle long enough and is stopped.
        case idleExit(String)
        /// A `start` call is answered: its component registered.
        case startAnswered(StartWaiter, target: String)
        /// A `start` call is answered with an error.
        case startRefused(StartWaiter, MediatorError)
        /// A held call is answered with an error without being forwarded.
        case heldFailed(ManagedComponent.HeldCall, MediatorError)
        /// A held call's own timeout passed before its component registered.
        case heldTimedOut(ManagedComponent.HeldCall)
        /// A held call goes out now, its timeout reduced by the time it waited.
        /// It counts as held until the broker says it is ``forwarding(_:)`` it.
        case deliver(ManagedComponent.HeldCall)
        /// Every at-boot component has registered or failed.
        case bootComplete
        case wakeUp(at: NIODeadline)
    }

    /// What ``cancel(caller:id:)`` took out of the queues.
    enum Cancellation {
        case heldCall(ManagedComponent.HeldCall)
        case startWaiter(StartWaiter)
        /// The index knew the id, but no queue held it any more.
        case alreadyGone
    }

    /// A process that ran this long after registering resets the count of quick restarts.
    static let steadyRunTime = TimeAmount.seconds(10)

    // Set from outside this file only by a restore (ComponentActivation+Snapshot.swift),
    // down to the queues of held calls and `start`s.
    /// The components the manifests describe, by target.
    var components: [String: ManagedComponent] = [:]
    var nextSpawnID = 0
    /// The at-boot groups not started yet, lowest priority first.
    var bootGroups: [[String]] = []
    /// The at-boot components of the group under way that have neither registered nor failed.
    var bootWaiting: Set<String> = []
    var bootDone = false
    /// After a crash: the stored processes that may claim their components (ComponentActivation+Adoption.swift).
    var adoption = ComponentAdoption()
    /// `mediator/start` calls waiting for their component to register.
    var startWaiters: [String: [StartWaiter]] = [:]
    /// Calls waiting for a component to start (and `start`s waiting for it
    /// to register), by caller: they count against the limits and obey the
    /// duplicate-id rule and `cancel` like calls in flight.
    var heldCalls = HeldCallIndex()
    /// The manifest files skipped at the last load, at most
    /// ``maxSkippedManifests``, and how many more there were.
    private(set) var skippedManifests: [SkippedManifest] = []
    private(set) var skippedManifestsLeftOut = 0

    /// How many skipped manifests are kept between loads: enough for any
    /// real folder, and a bound on what `list` carries for them; the rest
    /// are counted.
    static let maxSkippedManifests = 64

    /// Keeps the files the loader refused, in place of those of the last
    /// load; says how many were left out.
    mutating func keepSkippedManifests(_ skipped: [SkippedManifest]) -> Int {
        skippedManifests = Array(skipped.prefix(Self.maxSkippedManifests))
        skippedManifestsLeftOut = skipped.count - skippedManifests.count
        return skippedManifestsLeftOut
    }

    // MARK: - Starting and stopping

    mutating func start(_ target: String, _ now: NIODeadline, _ registry: Registry, _ actions: inout [Action]) {
        guard let component = components[target] else { return }
        // Its process may be one left by a crash, about to claim it (settleAdoption starts it otherwise).
        if adoption.defersStarts, case .exec = component.manifest.launch { return }
        actions.append(.activated(target))
        components[target]?.state = .starting
        components[target]?.startDeadline = now + Self.startTimeout(component.manifest)
        components[target]?.restartAt = nil
        switch component.manifest.launch {
        case .exec:
            let missing = max(component.manifest.instances - component.processes.count, 0)
            for _ in 0..<missing { spawn(target, now, &actions) }
        case .unit(let unit):
            actions.append(.startUnit(unit, target: target))
        }
        scheduleWakeUp(now, registry, &actions)
    }

    private static func startTimeout(_ manifest: Manifest) -> TimeAmount {
        .nanoseconds(Int64(manifest.startTimeoutSeconds * 1e9))
    }

    private mutating func spawn(_ target: String, _ now: NIODeadline, _ actions: inout [Action]) {
        guard let manifest = components[target]?.manifest, case .exec(let arguments, let environment, let directory) = manifest.launch
        else { return }
        nextSpawnID += 1
        components[target]?.processes.append(ManagedComponent.Process(spawnID: nextSpawnID, startedAt: now))
        actions.append(.spawn(SpawnOrder(
            spawnID: nextSpawnID, target: target, arguments: arguments, environment: environment,
            workingDirectory: directory, user: manifest.user, group: manifest.group)))
    }

    /// Asks a component to stop (`mediator.stop` to every instance), then
    /// SIGTERM after `grace`.
    mutating func stop(_ target: String, reason: String, grace: TimeAmount, now: NIODeadline, registry: Registry) -> [Action] {
        var actions: [Action] = []
        stop(target, reason, grace, now, registry, &actions)
        return actions
    }

    private mutating func stop(
        _ target: String, _ reason: String, _ grace: TimeAmount, _ now: NIODeadline, _ registry: Registry, _ actions: inout [Action]
    ) {
        guard let component = components[target] else { return }
        components[target]?.state = .stopping
        components[target]?.termAt = now + grace
        // A crashed instance waiting for its backoff is not replaced after a stop.
        components[target]?.restartAt = nil
        actions.append(.stopping(target, reason: reason))
        if component.processes.isEmpty, registry.target(target) == nil {
            components[target]?.state = .activatable
            components[target]?.termAt = nil
        }
        scheduleWakeUp(now, registry, &actions)
    }

    private func terminate(_ target: String, _ registry: Registry, _ actions: inout [Action]) {
        guard let component = components[target] else { return }
        if case .unit(let unit) = component.manifest.launch {
            actions.append(.stopUnit(unit))
            return
        }
        let spawned = Set(component.processes.compactMap(\.pid))
        for pid in spawned.sorted() where pid > 0 { actions.append(.signal(pid: pid, signal: SIGTERM, group: true)) }
        // Instances that registered on their own: just that process.
        let others = Set((registry.target(target)?.instances ?? []).map(\.credentials.pid)).subtracting(spawned)
        for pid in others.sorted() where pid > 0 { actions.append(.signal(pid: pid, signal: SIGTERM, group: false)) }
    }

    /// Every process the daemon started and that reported its pid, for SIGTERM when the daemon stops.
    var startedProcessIDs: [Int32] {
        components.values.flatMap { $0.processes.compactMap(\.pid) }
    }

    // MARK: - Reports from the host

    mutating func processStarted(spawnID: Int, pid: Int32) {
        for target in components.keys {
            guard let index = components[target]?.processes.firstIndex(where: { $0.spawnID == spawnID }) else { continue }
            components[target]?.processes[index].pid = pid
        }
    }

    mutating func processExited(spawnID: Int, end: ProcessEnd, now: NIODeadline, registry: Registry) -> [Action] {
        guard let target = components.first(where: { $0.value.processes.contains { $0.spawnID == spawnID } })?.key,
            let component = components[target], let process = component.processes.first(where: { $0.spawnID == spawnID })
        else { return [] }
        components[target]?.processes.removeAll { $0.spawnID == spawnID }
        components[target]?.lastExit = component.endedBecause ?? end.description
        components[target]?.endedBecause = nil
        let remaining = components[target]?.processes.count ?? 0
        var actions: [Action] = [.processEnded(target, pid: process.pid ?? 0, end: end)]
        if process.registered, now - process.startedAt >= Self.steadyRunTime { components[target]?.consecutiveRestarts = 0 }

        switch component.state {
        case .stopping:
            if remaining == 0 { settleStopped(target, now, registry, &actions) }
        case .starting where !process.registered && remaining == 0 && registry.target(target) == nil:
            actions.append(.startFailed(target, .exited))
            failHeld(target, MediatorError(.activationFailed, "\"\(target)\" \(end) before it registered"), &actions)
            components[target]?.startDeadline = nil
            giveUpOrRestart(target, now, registry, restart: false, failed: true, &actions)
            bootSettled(target, now, registry, &actions)
        default:
            let policy = component.manifest.restart
            let restart = !component.removed && (policy == .always || (policy == .onFailure && !end.isClean))
            giveUpOrRestart(target, now, registry, restart: restart, failed: !end.isClean, &actions)
        }
        scheduleWakeUp(now, registry, &actions)
        return actions
    }

    mutating func unitFailed(target: String, reason: String, now: NIODeadline, registry: Registry) -> [Action] {
        guard components[target]?.state == .starting else { return [] }
        components[target]?.lastExit = "unit could not be started: \(reason)"
        var actions: [Action] = [.startFailed(target, .unitFailed)]
        failHeld(target, MediatorError(.activationFailed, "\"\(target)\" could not be started: \(reason)"), &actions)
        components[target]?.startDeadline = nil
        giveUpOrRestart(target, now, registry, restart: false, failed: true, &actions)
        bootSettled(target, now, registry, &actions)
        return actions
    }

    /// After a process ended: schedule a replacement (with backoff), give up
    /// after the restart limit, or go back to waiting for the next call.
    /// Failures and restarts count toward the limit; a clean exit that is not
    /// restarted does not. A component that fails before it ever registers is
    /// not restarted by itself: its held calls fail, and the next call tries again.
    private mutating func giveUpOrRestart(
        _ target: String, _ now: NIODeadline, _ registry: Registry, restart: Bool, failed: Bool, _ actions: inout [Action]
    ) {
        guard let manifest = components[target]?.manifest else { return }
        if restart || failed { components[target]?.consecutiveRestarts += 1 }
        let count = components[target]?.consecutiveRestarts ?? 0
        let limitReached = count > manifest.restartLimit
        let registered = registry.target(target) != nil
        if restart, !limitReached {
            components[target]?.restarts += 1
            actions.append(.restartScheduled(target))
            let backoff = components[target]?.restartBackoff ?? .zero
            components[target]?.restartAt = now + backoff
            if !registered { components[target]?.state = .starting }
            return
        }
        guard !registered, components[target]?.processes.isEmpty == true else { return }
        if limitReached, failed || restart {
            components[target]?.state = .failed
            let reason = components[target]?.lastExit ?? "unknown reason"
            failHeld(target, MediatorError(.activationFailed, "\"\(target)\" gave up after \(count) failures in a row: \(reason)"), &actions)
            actions.append(.gaveUp(target, failures: count))
            return
        }
        components[target]?.state = .activatable
        components[target]?.runningSince = nil
        // Calls (or a `start`) that came in while it went away start it again.
        if hasWaiters(target) { start(target, now, registry, &actions) }
    }

    func hasWaiters(_ target: String) -> Bool {
        components[target]?.held.isEmpty == false || startWaiters[target]?.isEmpty == false
    }

    private mutating func settleStopped(_ target: String, _ now: NIODeadline, _ registry: Registry, _ actions: inout [Action]) {
        components[target]?.termAt = nil
        components[target]?.runningSince = nil
        if components[target]?.removed == true {
            failHeld(target, MediatorError(.targetNotFound, "no component serves target \"\(target)\""), &actions)
            components[target] = nil
            return
        }
        components[target]?.state = .activatable
        // Calls (or a `start`) that came in while it stopped start it again.
        if hasWaiters(target) { start(target, now, registry, &actions) }
    }

    // MARK: - Registration

    /// A connection (of process `pid`) registered a target: if it is a
    /// managed component, it is running now, its `start`s are answered and
    /// its held calls go out, in arrival order. Once the broker has
    /// delivered them, it calls ``settleRegistration(_:now:registry:)``.
    mutating func registered(_ target: String, pid: Int32, now: NIODeadline) -> [Action] {
        guard components[target] != nil else { return [] }
        if let index = components[target]?.processes.firstIndex(where: { $0.pid == pid }) {
            components[target]?.processes[index].registered = true
        }
        if components[target]?.state != .running { components[target]?.runningSince = now }
        components[target]?.state = .running
        components[target]?.startDeadline = nil
        components[target]?.lastActivity = now
        var actions: [Action] = []
        for waiter in startWaiters.removeValue(forKey: target) ?? [] {
            heldCalls.remove(caller: waiter.connection, id: waiter.id, bytes: waiter.bytes)
            actions.append(.startAnswered(waiter, target: target))
        }
        guard let held = components[target]?.held, !held.isEmpty else { return actions }
        components[target]?.held = []
        for var call in held {
            if let deadline = call.deadline {
                call.request.timeoutMs = max(1, (deadline - now).nanoseconds / 1_000_000)
            }
            actions.append(.deliver(call))
        }
        return actions
    }

    /// After a registration's held calls went out (they count in the
    /// registry's calls in flight): the boot order moves on and the next
    /// deadline is due.
    mutating func settleRegistration(_ target: String, now: NIODeadline, registry: Registry) -> [Action] {
        guard components[target] != nil else { return [] }
        var actions: [Action] = []
        bootSettled(target, now, registry, &actions)
        scheduleWakeUp(now, registry, &actions)
        return actions
    }

    /// The last instance of a target went away (unregistered or disconnected).
    mutating func gone(_ target: String, now: NIODeadline, registry: Registry) -> [Action] {
        guard let component = components[target] else { return [] }
        var actions: [Action] = []
        switch component.state {
        case .stopping:
            if component.processes.isEmpty { settleStopped(target, now, registry, &actions) }
        case .running:
            // A process of ours will report its exit; one we did not start is simply gone.
            if component.processes.isEmpty {
                components[target]?.state = .activatable
                components[target]?.runningSince = nil
            }
        default:
            break
        }
        return actions
    }

    /// A call to or from the target: its idle time starts again.
    mutating func noteActivity(_ target: String, now: NIODeadline) {
        guard !components.isEmpty else { return }
        components[target]?.lastActivity = now
    }

    // MARK: - Time

    /// Start timeouts, held calls' timeouts, restarts, SIGTERM after a stop's
    /// `grace`, idle exits: whatever is due at `now`.
    mutating func expire(now: NIODeadline, registry: Registry, stopGrace: TimeAmount) -> [Action] {
        var actions: [Action] = []
        for target in components.keys.sorted() {
            guard var component = components[target] else { continue }
            for call in component.held where (call.deadline.map { $0 <= now } ?? false) {
                actions.append(.heldTimedOut(call))
                heldCalls.remove(caller: call.caller, id: call.request.id, bytes: call.bytes)
            }
            component.held.removeAll { call in call.deadline.map { $0 <= now } ?? false }
            components[target]?.held = component.held
            if let deadline = component.startDeadline, deadline <= now, component.state == .starting {
                let seconds = component.manifest.startTimeoutSeconds
                let shown = seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
                let reason = "did not register within \(shown) s"
                actions.append(.startFailed(target, .startTimeout))
                components[target]?.lastExit = reason
                components[target]?.startDeadline = nil
                failHeld(target, MediatorError(.activationFailed, "\"\(target)\" \(reason)"), &actions)
                for pid in component.processes.compactMap(\.pid) { actions.append(.signal(pid: pid, signal: SIGKILL, group: true)) }
                components[target]?.endedBecause = reason
                components[target]?.state = component.processes.isEmpty ? .activatable : .stopping
                components[target]?.consecutiveRestarts += 1
                bootSettled(target, now, registry, &actions)
            }
            if let at = component.restartAt, at <= now {
                components[target]?.restartAt = nil
                if case .exec = component.manifest.launch {
                    spawn(target, now, &actions)
                    if registry.target(target) == nil {
                        components[target]?.startDeadline = now + Self.startTimeout(component.manifest)
                    }
                } else {
                    start(target, now, registry, &actions)
                }
            }
            if let at = component.termAt, at <= now, component.state == .stopping {
                components[target]?.termAt = nil
                terminate(target, registry, &actions)
            }
            if let idleAt = idleDeadline(target, registry: registry), idleAt <= now {
                let removed = components[target]?.removed == true
                if !removed { actions.append(.idleExit(target)) }
                stop(target, removed ? "removed" : "idle", stopGrace, now, registry, &actions)
            }
        }
        scheduleWakeUp(now, registry, &actions)
        return actions
    }

    /// When a running component becomes idle enough to stop (or, removed from
    /// the manifests, has no calls left).
    func idleDeadline(_ target: String, registry: Registry) -> NIODeadline? {
        guard let component = components[target], component.state == .running,
            let entry = registry.target(target), entry.instances.allSatisfy({ $0.inFlight == 0 }),
            component.held.isEmpty
        else { return nil }
        if component.removed { return component.lastActivity ?? .uptimeNanoseconds(0) }
        guard component.manifest.idleExitSeconds > 0, let last = component.lastActivity else { return nil }
        return last + .seconds(Int64(component.manifest.idleExitSeconds))
    }

    /// When the broker must call ``expire(now:registry:stopGrace:)`` next (never before `now`); nil when nothing is due.
    func nextWakeUp(now: NIODeadline, registry: Registry) -> NIODeadline? {
        let next = components.keys.compactMap { target in
            components[target]?.nextDeadline(idleCheck: idleDeadline(target, registry: registry))
        }.min()
        return next.map { max($0, now) }
    }

    func scheduleWakeUp(_ now: NIODeadline, _ registry: Registry, _ actions: inout [Action]) {
        if let at = nextWakeUp(now: now, registry: registry) { actions.append(.wakeUp(at: at)) }
    }
}
