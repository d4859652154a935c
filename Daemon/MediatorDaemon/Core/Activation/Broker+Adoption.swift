import Logging
import NIOCore

/// The broker's side of ``ComponentAdoption``: after a crash, a component
/// process the crashed daemon started registers again (told
/// `mediator.reregister`, or on a new connection) and is supervised as its
/// component's, instead of being ended and started again.
extension Broker {
    /// How long after the re-registration window a stored process may
    /// still claim its component: a component under load, or one that
    /// reconnects, may register again a little after the calls held for
    /// it gave up. Starts of exec components wait this long at most.
    static let adoptionMargin = TimeAmount.seconds(2)

    /// The host found these processes in the fd store after a crash: they
    /// may claim their components until `reregister_hold_ms` plus
    /// ``adoptionMargin`` from `now`.
    package func awaitAdoption(of stored: [(spawnID: Int, pid: Int32)], now: NIODeadline) -> [BrokerEffect] {
        let bound = TimeAmount.milliseconds(max(configuration.reregisterHoldMs, 0)) + Self.adoptionMargin
        activation.awaitAdoption(of: stored, until: now + bound)
        guard let deadline = activation.adoption.deadline else { return takeEffects() }
        logger.notice(
            "component processes left by the crash are supervised again once they register",
            metadata: ["pids": "\(stored.map(\.pid).sorted())", "within_ms": "\(bound.nanoseconds / 1_000_000)"])
        wakeUp(at: deadline)
        return takeEffects()
    }

    /// A connection of process `pid` is registering `target`: it may be a
    /// stored process claiming its component (before the registration
    /// makes the component running).
    func claimStoredProcess(_ target: String, pid: Int32, now: NIODeadline) {
        guard activation.adoption.defersStarts, let adopted = activation.claim(target, pid: pid, now: now) else { return }
        logger.notice(
            "a component process left by the crash registered again: supervised as its component's",
            metadata: ["target": "\(adopted.target)", "pid": "\(adopted.pid)", "spawn_id": "\(adopted.spawnID)"])
        effects.append(.adoptStoredProcess(spawnID: adopted.spawnID, pid: adopted.pid, target: adopted.target))
    }

    /// Ends the adoption once every stored process claimed its component,
    /// or at its deadline: the rest are ended, and the starts that waited happen.
    func settleAdoption(now: NIODeadline) {
        guard let deadline = activation.adoption.deadline else { return }
        let (unclaimed, actions) = activation.settleAdoption(now: now, registry: registry)
        if activation.adoption.deadline != nil {
            wakeUp(at: deadline)
            return
        }
        if !unclaimed.isEmpty {
            logger.notice(
                "component processes left by the crash did not register again in time: ended",
                metadata: ["spawn_ids": "\(unclaimed)"])
            effects.append(.endStoredProcesses(unclaimed))
        }
        carryOut(actions, now: now)
    }
}
