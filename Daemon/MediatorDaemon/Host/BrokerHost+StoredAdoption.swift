import Logging

#if canImport(Glibc)
import Glibc
#endif

/// After a crash (issue 28), the host's side of adopting the component
/// processes the crashed daemon kept in the fd store: the broker decides
/// which process is whose (Core/Activation/ComponentActivation+Adoption.swift);
/// the host holds their descriptors meanwhile, watches those claimed as
/// after a restart, and ends the rest.
extension BrokerHost {
    /// Offers the stored processes that still have a pidfd to the broker,
    /// to be claimed by registering; those without one ended already and
    /// stay in `storedProcesses` for ``endUnclaimedStoredProcesses()``.
    /// On the loop's thread, before anything registers.
    func offerStoredProcessesForAdoption() {
        guard let stored = storedProcesses, !stored.isEmpty else { return }
        let claimable = stored.filter { $0.value.pidfd != nil }
        storedProcesses = stored.filter { $0.value.pidfd == nil }
        guard !claimable.isEmpty else { return }
        processes.claimable.merge(claimable) { _, offered in offered }
        let offered = claimable.values.sorted { $0.spawnID < $1.spawnID }.map { (spawnID: $0.spawnID, pid: $0.pid) }
        apply(broker.awaitAdoption(of: offered, now: .now()))
    }

    /// The broker says `spawnID` claimed `target`'s component: watched
    /// through its stored pidfd and its pipes read on, as after a restart
    /// (its entries stay in the store under their names). Its end reaches
    /// the broker as ``ProcessEnd/unobserved``: this daemon is not its parent.
    func adoptStoredProcess(spawnID: Int, pid: Int32, target: String) {
        var stored: [Int: StoredProcess]? = processes.claimable
        let handed = ComponentProcesses.HandOver(spawnID: spawnID, target: target, pid: pid, stdout: nil, stderr: nil)
        processes.adopt([handed], stored: &stored, goneAs: .unobserved) { [unowned self] spawnID, end in
            // Later, on the loop: one found gone is reported from within this effect.
            run { broker, now in broker.processExited(spawnID: spawnID, end: end, now: now) }
        }
        processes.claimable = stored ?? [:]
        logger.info("watching a component process left by the crash", metadata: ["target": "\(target)", "pid": "\(pid)"])
    }

    /// The broker says nobody claimed these: ended as before adoption
    /// existed (ComponentProcesses.endLeftOvers: SIGTERM, then SIGKILL).
    func endStoredProcesses(_ spawnIDs: [Int]) {
        let ending = spawnIDs.compactMap { processes.claimable.removeValue(forKey: $0) }
        guard !ending.isEmpty else { return }
        processes.endLeftOvers(ending, grace: Self.componentStopGrace)
    }

    /// A stop while processes may still claim their components: they end with the rest.
    func endClaimableProcesses() {
        guard !processes.claimable.isEmpty else { return }
        endStoredProcesses(processes.claimable.keys.sorted())
    }
}
