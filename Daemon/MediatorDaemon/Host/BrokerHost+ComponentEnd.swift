import Logging
import MediatorEventLoop

#if canImport(Glibc)
import Glibc
#endif

/// Under systemd the unit has KillMode=process, so that a restart does not
/// kill the component processes (issue 28): then the daemon's own stop
/// must end them, or `systemctl stop` would leave them running.
extension BrokerHost {
    /// How long components get after SIGTERM before SIGKILL, and how long
    /// SIGKILL's ends are waited for: bounded well below systemd's
    /// TimeoutStopSec= (90 s by default).
    static let componentStopGrace = Duration.seconds(5)
    static let componentKillWait = Duration.seconds(2)

    /// SIGTERM to every component process (the broker's SIGTERM reached
    /// those it knows; this covers adopted ones it does not), SIGKILL to
    /// those left after the grace, then `then` once all ended or after the
    /// last wait. On the loop's thread.
    func endComponents(then: @escaping () -> Void) {
        endClaimableProcesses()
        guard !processes.isEmpty else { return then() }
        processes.signalAll(SIGTERM)
        let started = ContinuousClock.now
        awaitComponents(until: started + Self.componentStopGrace) { [self] in
            guard !processes.isEmpty else {
                logger.info("stop: every component process ended", metadata: ["waited_ms": "\(Self.milliseconds(since: started))"])
                return then()
            }
            logger.warning("stop: component processes outlived the grace; SIGKILL", metadata: [
                "grace_s": "\(Self.componentStopGrace.components.seconds)",
            ])
            processes.signalAll(SIGKILL)
            awaitComponents(until: .now + Self.componentKillWait) { [self] in
                if !processes.isEmpty { logger.error("stop: component processes still run after SIGKILL") }
                then()
            }
        }
    }

    /// Calls `then` once no component process runs, or at `deadline`.
    private func awaitComponents(until deadline: ContinuousClock.Instant, then: @escaping () -> Void) {
        guard !processes.isEmpty, ContinuousClock.now < deadline else { return then() }
        do {
            componentEndTimer = try loop.addTimer(after: .milliseconds(10), accuracy: .milliseconds(2)) { [self] _, _ in
                componentEndTimer = nil
                awaitComponents(until: deadline, then: then)
            }
        } catch {
            logger.error("stop: no timer to wait for component processes with", metadata: ["error": "\(error)"])
            then()
        }
    }

    private static func milliseconds(since start: ContinuousClock.Instant) -> Int64 {
        let elapsed = ContinuousClock.now - start
        return elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
    }

    /// The stored processes no resumption adopted and none may claim (after
    /// a crash, those already gone; BrokerHost+StoredAdoption.swift): ended,
    /// since nothing knows what they were (ComponentProcesses.endLeftOvers).
    func endUnclaimedStoredProcesses() {
        guard let stored = storedProcesses else { return }
        storedProcesses = nil
        processes.endLeftOvers(stored.values.sorted { $0.spawnID < $1.spawnID }, grace: Self.componentStopGrace)
    }
}
