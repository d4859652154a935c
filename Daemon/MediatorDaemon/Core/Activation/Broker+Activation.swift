import Logging
import MediatorConfiguration
import MediatorProtocol
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Components started on demand (contract section 4, step 5): calls to a
/// known but unregistered target are held while the daemon starts it, and
/// delivered in order once it registers. ``ComponentActivation`` owns the
/// state and decides; this file hands it the facts (time, the registry, the
/// configuration) and turns its actions into log lines, statistics, frames
/// and effects, in the order it gives them.
extension Broker {
    // MARK: - Manifests

    /// Installs the manifests at start, or replaces them on reload: new ones
    /// become activatable, changed ones apply from their next start, removed
    /// ones stop once their calls finish. `skipped`, the files the loader
    /// refused, replace those of the last load: `list` and `status` report them.
    package func loadManifests(_ manifests: [Manifest], skipped: [SkippedManifest] = [], now: NIODeadline) -> [BrokerEffect] {
        keepSkippedManifests(skipped)
        carryOut(activation.loadManifests(manifests, now: now, registry: registry), now: now)
        return takeEffects()
    }

    /// Starts the at-boot components, lowest priority first; each priority
    /// group starts once the one before has registered or failed.
    func startBootComponents(now: NIODeadline) -> [BrokerEffect] {
        carryOut(activation.startBootComponents(now: now, registry: registry), now: now)
        return takeEffects()
    }

    // MARK: - Starting and stopping

    /// Sends `mediator.stop` to every instance, then SIGTERM after the grace period.
    func stop(_ target: String, reason: String, now: NIODeadline) {
        carryOut(activation.stop(target, reason: reason, grace: componentStopGrace, now: now, registry: registry), now: now)
    }

    var componentStopGrace: TimeAmount { .milliseconds(configuration.componentStopGraceMs) }

    /// SIGTERM to every process the daemon started, when it stops.
    func terminateStartedComponents() -> [BrokerEffect] {
        for pid in activation.startedProcessIDs { effects.append(.signal(pid: pid, signal: SIGTERM, group: true)) }
        return takeEffects()
    }

    // MARK: - Reports from the host

    func processStarted(spawnID: Int, pid: Int32, now: NIODeadline) -> [BrokerEffect] {
        activation.processStarted(spawnID: spawnID, pid: pid)
        return takeEffects()
    }

    func processExited(spawnID: Int, end: ProcessEnd, now: NIODeadline) -> [BrokerEffect] {
        carryOut(activation.processExited(spawnID: spawnID, end: end, now: now, registry: registry), now: now)
        return takeEffects()
    }

    package func unitFailed(target: String, reason: String, now: NIODeadline) -> [BrokerEffect] {
        carryOut(activation.unitFailed(target: target, reason: reason, now: now, registry: registry), now: now)
        return takeEffects()
    }

    // MARK: - Registration

    /// A connection registered a target: if it is a managed component, it is
    /// running now and its held calls go out.
    func componentRegistered(_ target: String, pid: Int32, now: NIODeadline) {
        claimStoredProcess(target, pid: pid, now: now)
        carryOut(activation.registered(target, pid: pid, now: now), now: now)
        carryOut(activation.settleRegistration(target, now: now, registry: registry), now: now)
        settleAdoption(now: now)
        if !reregistrationHold.isEmpty { releaseReregistrationHold(target, now: now) }
    }

    /// The last instance of a target went away (unregistered or disconnected).
    func componentGone(_ target: String, now: NIODeadline) {
        carryOut(activation.gone(target, now: now, registry: registry), now: now)
    }

    func noteActivity(_ target: String, now: NIODeadline) {
        activation.noteActivity(target, now: now)
    }

    // MARK: - Time

    /// Start timeouts, held calls' timeouts, restarts, SIGTERM after a stop's grace, idle exits.
    func expireComponents(now: NIODeadline) {
        carryOut(activation.expire(now: now, registry: registry, stopGrace: componentStopGrace), now: now)
        settleAdoption(now: now)
    }

    func scheduleComponentWakeUp(now: NIODeadline) {
        if let next = activation.nextWakeUp(now: now, registry: registry) { wakeUp(at: next) }
    }

    // MARK: - Effects

    /// Carries out activation's actions, in order.
    func carryOut(_ actions: [ComponentActivation.Action], now: NIODeadline) {
        for action in actions {
            switch action {
            case .manifestsLoaded(let count):
                logger.info("component manifests loaded", metadata: ["count": "\(count)"])
            case .bootStarting(let target):
                logger.info("starting at-boot component", metadata: ["target": "\(target)"])
            case .activated(let target):
                statistics.componentActivated(target)
            case .spawn(let order):
                logger.info(
                    "starting component", metadata: ["target": "\(order.target)", "command": "\(order.arguments.joined(separator: " "))"])
                effects.append(.spawn(order))
            case .startUnit(let unit, let target):
                effects.append(.startUnit(unit, target: target))
            case .stopUnit(let unit):
                effects.append(.stopUnit(unit))
            case .signal(let pid, let signal, let group):
                effects.append(.signal(pid: pid, signal: signal, group: group))
            case .stopping(let target, let reason):
                for instance in registry.target(target)?.instances ?? [] {
                    send(instance.connection, writer.event("mediator.stop", data: ["target": .string(target), "reason": .string(reason)]))
                }
                logger.info("stopping component", metadata: ["target": "\(target)", "reason": "\(reason)"])
            case .processEnded(let target, let pid, let end):
                logger.info("component process ended", metadata: ["target": "\(target)", "pid": "\(pid)", "end": "\(end)"])
            case .startFailed(let target, let failure):
                statistics.componentStartFailed(target, failure)
            case .restartScheduled(let target):
                statistics.componentRestarted(target)
            case .gaveUp(let target, let failures):
                logger.warning("component failed too often; not starting it again", metadata: ["target": "\(target)", "failures": "\(failures)"])
            case .idleExit(let target):
                statistics.componentIdleExit(target)
            case .startAnswered(let waiter, let target):
                if let idBytes = waiter.idBytes {
                    send(waiter.connection, writer.result(callerID: idBytes, ["target": .string(target), "state": "running"]))
                }
            case .startRefused(let waiter, let error):
                if let idBytes = waiter.idBytes, peers[waiter.connection] != nil {
                    send(waiter.connection, writer.error(callerID: idBytes, error, delivered: .no))
                }
            case .heldFailed(let call, let error):
                countHeldEnd(call, code: error.code.rawValue)
                if let idBytes = call.request.idBytes, peers[call.caller] != nil {
                    send(call.caller, writer.error(callerID: idBytes, error, delivered: .no))
                }
            case .heldTimedOut(let call):
                if let idBytes = call.request.idBytes, peers[call.caller] != nil {
                    send(call.caller, writer.error(callerID: idBytes, MediatorError(
                        .timeout, "\"\(call.request.target)\" did not start within the call's timeout"), delivered: .no))
                }
                countHeldEnd(call, code: ErrorCode.timeout.rawValue)
            case .deliver(let call):
                activation.forwarding(call)
                guard peers[call.caller] != nil else {
                    countHeldEnd(call, code: nil)
                    continue
                }
                route(call.request, from: call.caller, now: now)
            case .bootComplete:
                effects.append(.bootComplete)
            case .wakeUp(let at):
                wakeUp(at: at)
            }
        }
    }
}
