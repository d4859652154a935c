import Logging
import MediatorConfiguration
import MediatorProtocol
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Components started on demand (contract section 4, step 5): calls to a
/// known but unregistered target are held while the daemon starts it, and
/// delivered in order once it registers.
extension Broker {
    // MARK: - Manifests

    /// Installs the manifests at start, or replaces them on reload: new ones
    /// become activatable, changed ones apply from their next start, removed
    /// ones stop once their calls finish. `skipped`, the files the loader
    /// refused, replace those of the last load: `list` and `status` report them.
    public func loadManifests(_ manifests: [Manifest], skipped: [SkippedManifest] = [], now: NIODeadline) -> [BrokerEffect] {
        keepSkippedManifests(skipped)
        let incoming = Dictionary(manifests.map { ($0.target, $0) }, uniquingKeysWith: { first, _ in first })
        for (target, manifest) in incoming {
            if components[target] != nil {
                components[target]?.manifest = manifest
                components[target]?.removed = false
            } else {
                components[target] = ManagedComponent(manifest: manifest)
            }
        }
        for target in components.keys where incoming[target] == nil {
            components[target]?.removed = true
            if components[target]?.state == .activatable || components[target]?.state == .failed {
                components[target] = nil
            }
        }
        logger.info("component manifests loaded", metadata: ["count": "\(incoming.count)"])
        scheduleComponentWakeUp(now: now)
        return takeEffects()
    }

    /// Starts the at-boot components, lowest priority first; each priority
    /// group starts once the one before has registered or failed.
    public func startBootComponents(now: NIODeadline) -> [BrokerEffect] {
        let boot = components.values.filter { $0.manifest.start == .atBoot && !$0.removed }
        let priorities = Set(boot.map(\.manifest.priority)).sorted()
        bootGroups = priorities.map { priority in boot.filter { $0.manifest.priority == priority }.map(\.manifest.target).sorted() }
        startNextBootGroup(now: now)
        return takeEffects()
    }

    func startNextBootGroup(now: NIODeadline) {
        while bootWaiting.isEmpty {
            guard !bootGroups.isEmpty else {
                if !bootDone {
                    bootDone = true
                    effects.append(.bootComplete)
                }
                return
            }
            let group = bootGroups.removeFirst()
            for target in group where components[target]?.state == .activatable {
                logger.info("starting at-boot component", metadata: ["target": "\(target)"])
                bootWaiting.insert(target)
                start(target, now: now)
            }
        }
    }

    func bootSettled(_ target: String, now: NIODeadline) {
        guard bootWaiting.remove(target) != nil else { return }
        if bootWaiting.isEmpty { startNextBootGroup(now: now) }
    }

    // MARK: - Starting and stopping

    func start(_ target: String, now: NIODeadline) {
        guard let component = components[target] else { return }
        statistics.componentActivated(target)
        components[target]?.state = .starting
        components[target]?.startDeadline = now + .nanoseconds(Int64(component.manifest.startTimeoutSeconds * 1e9))
        components[target]?.restartAt = nil
        switch component.manifest.launch {
        case .exec:
            let missing = max(component.manifest.instances - component.processes.count, 0)
            for _ in 0..<missing { spawn(target, now: now) }
        case .unit(let unit):
            effects.append(.startUnit(unit, target: target))
        }
        scheduleComponentWakeUp(now: now)
    }

    func spawn(_ target: String, now: NIODeadline) {
        guard let manifest = components[target]?.manifest, case .exec(let arguments, let environment, let directory) = manifest.launch
        else { return }
        nextSpawnID += 1
        components[target]?.processes.append(ManagedComponent.Process(spawnID: nextSpawnID, startedAt: now))
        logger.info("starting component", metadata: ["target": "\(target)", "command": "\(arguments.joined(separator: " "))"])
        effects.append(.spawn(SpawnOrder(
            spawnID: nextSpawnID, target: target, arguments: arguments, environment: environment,
            workingDirectory: directory, user: manifest.user, group: manifest.group)))
    }

    /// Sends `mediator.stop` to every instance, then SIGTERM after the grace period.
    func stop(_ target: String, reason: String, now: NIODeadline) {
        guard let component = components[target] else { return }
        components[target]?.state = .stopping
        components[target]?.termAt = now + .milliseconds(configuration.componentStopGraceMs)
        // A crashed instance waiting for its backoff is not replaced after a stop.
        components[target]?.restartAt = nil
        for instance in registry.target(target)?.instances ?? [] {
            send(instance.connection, writer.event("mediator.stop", data: ["target": .string(target), "reason": .string(reason)]))
        }
        if component.processes.isEmpty, registry.target(target) == nil {
            components[target]?.state = .activatable
            components[target]?.termAt = nil
        }
        logger.info("stopping component", metadata: ["target": "\(target)", "reason": "\(reason)"])
        scheduleComponentWakeUp(now: now)
    }

    func terminate(_ target: String) {
        guard let component = components[target] else { return }
        if case .unit(let unit) = component.manifest.launch {
            effects.append(.stopUnit(unit))
            return
        }
        let spawned = Set(component.processes.compactMap(\.pid))
        for pid in spawned.sorted() where pid > 0 { effects.append(.signal(pid: pid, signal: SIGTERM, group: true)) }
        // Instances that registered on their own: just that process.
        let others = Set((registry.target(target)?.instances ?? []).map(\.credentials.pid)).subtracting(spawned)
        for pid in others.sorted() where pid > 0 { effects.append(.signal(pid: pid, signal: SIGTERM, group: false)) }
    }

    /// SIGTERM to every process the daemon started, when it stops.
    public func terminateStartedComponents() -> [BrokerEffect] {
        for component in components.values {
            for pid in component.processes.compactMap(\.pid) { effects.append(.signal(pid: pid, signal: SIGTERM, group: true)) }
        }
        return takeEffects()
    }

    // MARK: - Reports from the host

    public func processStarted(spawnID: Int, pid: Int32, now: NIODeadline) -> [BrokerEffect] {
        for target in components.keys {
            guard let index = components[target]?.processes.firstIndex(where: { $0.spawnID == spawnID }) else { continue }
            components[target]?.processes[index].pid = pid
        }
        return takeEffects()
    }

    public func processExited(spawnID: Int, end: ProcessEnd, now: NIODeadline) -> [BrokerEffect] {
        guard let target = components.first(where: { $0.value.processes.contains { $0.spawnID == spawnID } })?.key,
            let component = components[target], let process = component.processes.first(where: { $0.spawnID == spawnID })
        else { return takeEffects() }
        components[target]?.processes.removeAll { $0.spawnID == spawnID }
        components[target]?.lastExit = component.endedBecause ?? end.description
        components[target]?.endedBecause = nil
        let remaining = components[target]?.processes.count ?? 0
        logger.info("component process ended", metadata: ["target": "\(target)", "pid": "\(process.pid ?? 0)", "end": "\(end)"])
        // A process that ran a while resets the count of quick restarts.
        if process.registered, now - process.startedAt >= .seconds(10) { components[target]?.consecutiveRestarts = 0 }

        switch component.state {
        case .stopping:
            if remaining == 0 { settleStopped(target, now: now) }
        case .starting where !process.registered && remaining == 0 && registry.target(target) == nil:
            statistics.componentStartFailed(target, .exited)
            failHeld(target, MediatorError(.activationFailed, "\"\(target)\" \(end) before it registered"))
            components[target]?.startDeadline = nil
            giveUpOrRestart(target, now: now, restart: false, failed: true)
            bootSettled(target, now: now)
        default:
            let policy = component.manifest.restart
            let restart = !component.removed && (policy == .always || (policy == .onFailure && !end.isClean))
            giveUpOrRestart(target, now: now, restart: restart, failed: !end.isClean)
        }
        scheduleComponentWakeUp(now: now)
        return takeEffects()
    }

    public func unitFailed(target: String, reason: String, now: NIODeadline) -> [BrokerEffect] {
        guard components[target]?.state == .starting else { return takeEffects() }
        components[target]?.lastExit = "unit could not be started: \(reason)"
        statistics.componentStartFailed(target, .unitFailed)
        failHeld(target, MediatorError(.activationFailed, "\"\(target)\" could not be started: \(reason)"))
        components[target]?.startDeadline = nil
        giveUpOrRestart(target, now: now, restart: false, failed: true)
        bootSettled(target, now: now)
        return takeEffects()
    }

    /// After a process ended: schedule a replacement (with backoff), give up
    /// after the restart limit, or go back to waiting for the next call.
    /// Failures and restarts count toward the limit; a clean exit that is not
    /// restarted does not. A component that fails before it ever registers is
    /// not restarted by itself: its held calls fail, and the next call tries again.
    func giveUpOrRestart(_ target: String, now: NIODeadline, restart: Bool, failed: Bool) {
        guard let manifest = components[target]?.manifest else { return }
        if restart || failed { components[target]?.consecutiveRestarts += 1 }
        let count = components[target]?.consecutiveRestarts ?? 0
        let limitReached = count > manifest.restartLimit
        let registered = registry.target(target) != nil
        if restart, !limitReached {
            components[target]?.restarts += 1
            statistics.componentRestarted(target)
            let backoff = components[target]?.restartBackoff ?? .zero
            components[target]?.restartAt = now + backoff
            if !registered { components[target]?.state = .starting }
            return
        }
        guard !registered, components[target]?.processes.isEmpty == true else { return }
        if limitReached, failed || restart {
            components[target]?.state = .failed
            let reason = components[target]?.lastExit ?? "unknown reason"
            failHeld(target, MediatorError(.activationFailed, "\"\(target)\" gave up after \(count) failures in a row: \(reason)"))
            logger.warning("component failed too often; not starting it again", metadata: ["target": "\(target)", "failures": "\(count)"])
            return
        }
        components[target]?.state = .activatable
        components[target]?.runningSince = nil
        // Calls (or a `start`) that came in while it went away start it again.
        if hasWaiters(target) { start(target, now: now) }
    }

    func hasWaiters(_ target: String) -> Bool {
        components[target]?.held.isEmpty == false || startWaiters[target]?.isEmpty == false
    }

    func settleStopped(_ target: String, now: NIODeadline) {
        components[target]?.termAt = nil
        components[target]?.runningSince = nil
        if components[target]?.removed == true {
            failHeld(target, MediatorError(.targetNotFound, "no component serves target \"\(target)\""))
            components[target] = nil
            return
        }
        components[target]?.state = .activatable
        // Calls (or a `start`) that came in while it stopped start it again.
        if hasWaiters(target) { start(target, now: now) }
    }

    // MARK: - Registration

    /// A connection registered a target: if it is a managed component, it is
    /// running now and its held calls go out.
    func componentRegistered(_ target: String, pid: Int32, now: NIODeadline) {
        guard components[target] != nil else { return }
        if let index = components[target]?.processes.firstIndex(where: { $0.pid == pid }) {
            components[target]?.processes[index].registered = true
        }
        if components[target]?.state != .running { components[target]?.runningSince = now }
        components[target]?.state = .running
        components[target]?.startDeadline = nil
        components[target]?.lastActivity = now
        for waiter in startWaiters.removeValue(forKey: target) ?? [] {
            heldCalls.remove(caller: waiter.connection, id: waiter.id, bytes: waiter.bytes)
            if let idBytes = waiter.idBytes {
                send(waiter.connection, writer.result(callerID: idBytes, ["target": .string(target), "state": "running"]))
            }
        }
        deliverHeld(target, now: now)
        bootSettled(target, now: now)
        scheduleComponentWakeUp(now: now)
    }

    /// The last instance of a target went away (unregistered or disconnected).
    func componentGone(_ target: String, now: NIODeadline) {
        guard let component = components[target] else { return }
        switch component.state {
        case .stopping:
            if component.processes.isEmpty { settleStopped(target, now: now) }
        case .running:
            // A process of ours will report its exit; one we did not start is simply gone.
            if component.processes.isEmpty {
                components[target]?.state = .activatable
                components[target]?.runningSince = nil
            }
        default:
            break
        }
    }

    func noteActivity(_ target: String, now: NIODeadline) {
        guard !components.isEmpty else { return }
        components[target]?.lastActivity = now
    }

    // MARK: - Time

    /// Start timeouts, held calls' timeouts, restarts, SIGTERM after a stop's grace, idle exits.
    func expireComponents(now: NIODeadline) {
        for target in components.keys.sorted() {
            guard var component = components[target] else { continue }
            for call in component.held where (call.deadline.map { $0 <= now } ?? false) {
                if let idBytes = call.request.idBytes, peers[call.caller] != nil {
                    send(call.caller, writer.error(callerID: idBytes, MediatorError(
                        .timeout, "\"\(target)\" did not start within the call's timeout"), delivered: .no))
                }
                heldCalls.remove(caller: call.caller, id: call.request.id, bytes: call.bytes)
                countHeldEnd(call, code: ErrorCode.timeout.rawValue)
            }
            component.held.removeAll { call in call.deadline.map { $0 <= now } ?? false }
            components[target]?.held = component.held
            if let deadline = component.startDeadline, deadline <= now, component.state == .starting {
                let seconds = component.manifest.startTimeoutSeconds
                let shown = seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
                let reason = "did not register within \(shown) s"
                statistics.componentStartFailed(target, .startTimeout)
                components[target]?.lastExit = reason
                components[target]?.startDeadline = nil
                failHeld(target, MediatorError(.activationFailed, "\"\(target)\" \(reason)"))
                for pid in component.processes.compactMap(\.pid) { effects.append(.signal(pid: pid, signal: SIGKILL, group: true)) }
                components[target]?.endedBecause = reason
                components[target]?.state = component.processes.isEmpty ? .activatable : .stopping
                components[target]?.consecutiveRestarts += 1
                bootSettled(target, now: now)
            }
            if let at = component.restartAt, at <= now {
                components[target]?.restartAt = nil
                if case .exec = component.manifest.launch {
                    spawn(target, now: now)
                    if registry.target(target) == nil {
                        components[target]?.startDeadline = now + .nanoseconds(Int64(component.manifest.startTimeoutSeconds * 1e9))
                    }
                } else {
                    start(target, now: now)
                }
            }
            if let at = component.termAt, at <= now, component.state == .stopping {
                components[target]?.termAt = nil
                terminate(target)
            }
            if let idleAt = idleDeadline(target), idleAt <= now {
                if components[target]?.removed != true { statistics.componentIdleExit(target) }
                stop(target, reason: components[target]?.removed == true ? "removed" : "idle", now: now)
            }
        }
        scheduleComponentWakeUp(now: now)
    }

    /// When a running component becomes idle enough to stop (or, removed from
    /// the manifests, has no calls left).
    func idleDeadline(_ target: String) -> NIODeadline? {
        guard let component = components[target], component.state == .running,
            let entry = registry.target(target), entry.instances.allSatisfy({ $0.inFlight == 0 }),
            component.held.isEmpty
        else { return nil }
        if component.removed { return component.lastActivity ?? .uptimeNanoseconds(0) }
        guard component.manifest.idleExitSeconds > 0, let last = component.lastActivity else { return nil }
        return last + .seconds(Int64(component.manifest.idleExitSeconds))
    }

    func scheduleComponentWakeUp(now: NIODeadline) {
        let next = components.keys.compactMap { target in components[target]?.nextDeadline(idleCheck: idleDeadline(target)) }.min()
        if let next { wakeUp(at: max(next, now)) }
    }
}
