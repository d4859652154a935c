import Logging
import MediatorProtocol
import MediatorSocket
import MediatorSocketHost
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// A `systemctl restart` that nobody notices (issue 28), the old process's
/// side: the same hand-over as a re-exec (BrokerHost+Reexec.swift), the
/// same memfd, but systemd stops this process and starts another one, so
/// the memfd goes into the fd store (`handover`) beside the connections
/// (`connection-ID`, stored as they were admitted) and every descriptor
/// they had read or queued (`handover-fd-N`, N its number here, as the
/// header names it). The listener is the socket unit's: systemd passes it
/// again. The next daemon finds them in `LISTEN_FDS` and carries on
/// (ReexecInheritance+Store.swift, then BrokerHost+Resume.swift).
extension BrokerHost {
    enum StoreHandOverOutcome: Equatable {
        /// Everything is in the store; nothing may be closed gracefully now.
        case handedOver(connections: Int, calls: Int)
        /// Not handed over (why); this process still owns its sockets and stops as usual.
        case notHandedOver(String)
    }

    /// From SIGTERM, when systemd restarts the unit. Waits (as a re-exec
    /// does, within the same bound) for the held calls a snapshot cannot
    /// carry to go out, then hands over. `done` runs on the loop.
    func handOverThroughStore(done: @escaping (StoreHandOverOutcome) -> Void) {
        let refusal: String? =
            stopping ? "mediatord is stopping already"
            : server == nil ? "no server"
            : connectionStore == nil ? "no fd store (--fd-store, under systemd)"
            : boundPath != nil ? "the listener is not systemd's (the daemon bound \(boundPath ?? "")): the next daemon would not get it"
            : nil
        if let refusal {
            done(.notHandedOver(refusal))
            return
        }
        restartHandOverUnderway = true
        attemptStoreHandOver(until: .now + Self.reexecHoldWait, done: done)
    }

    private func attemptStoreHandOver(until waitUntil: ContinuousClock.Instant, done: @escaping (StoreHandOverOutcome) -> Void) {
        dispatch?.drain()
        if broker.hasUncarriedHeldCalls || descriptors.isHoldingAny || processes.isStartingAny, ContinuousClock.now < waitUntil {
            do {
                restartHandOverTimer = try loop.addTimer(after: .milliseconds(10), accuracy: .milliseconds(1)) { [unowned self] _, _ in
                    restartHandOverTimer = nil
                    attemptStoreHandOver(until: waitUntil, done: done)
                }
            } catch {
                restartHandOverUnderway = false
                done(.notHandedOver("no timer: \(error)"))
            }
            return
        }
        if broker.hasUncarriedHeldCalls {
            apply(broker.answerUncarriedHeldCalls(MediatorError(.componentUnavailable, "mediatord restarted while the call waited for its component"), now: .now()))
        }
        let outcome = storeHandOver()
        if case .notHandedOver = outcome { restartHandOverUnderway = false }
        done(outcome)
    }

    private func storeHandOver() -> StoreHandOverOutcome {
        guard let server, let store = connectionStore else { return .notHandedOver("no server") }
        // Lines read and queued for their turn are handled now (their answers join the output handed over).
        dispatch?.drain()
        // A re-exec asked meanwhile will not happen: this process goes.
        if let late = pendingReexec {
            pendingReexec = nil
            reexecTimer?.cancel()
            reexecTimer = nil
            answerReexec(late.requesters, .failure(MediatorError(.internal, "mediatord is restarting")))
            dispatch?.drain()
        }
        let snapshot = broker.snapshot(now: .now())
        guard let sockets = server.handOver() else { return .notHandedOver("the sockets cannot be handed over") }
        let kept = ReexecHandOver.descriptors(of: sockets)
        // The components run on (KillMode=process). Their pidfds and pipes
        // are in the fd store since they started (ComponentProcesses): the
        // next daemon finds them there by spawn id and pid, not by the
        // numbers they have here.
        _ = self.processes.storeForHandOver()
        let processes = self.processes.handOver().map { process in
            var process = process
            process.stdout = nil
            process.stderr = nil
            return process
        }
        let state = HostHandOverState(
            boundPath: nil, advertisedPath: advertisedPath, requesters: [], descriptors: descriptors.handOver,
            reexecs: reexecs, processes: processes)
        let handOver = ReexecHandOver(
            descriptors: kept, host: state,
            broker: snapshot.encoded(version: reexecSettings?.snapshotVersion ?? BrokerSnapshot.currentVersion),
            sockets: sockets.encoded())
        let bytes = handOver.encoded()
        var stored: [String] = []
        func undo(_ reason: String) -> StoreHandOverOutcome {
            for name in stored where ConnectionStore.connection(named: name) == nil { store.remove(name) }
            takeSocketsBack(sockets, reason)
            return .notHandedOver(reason)
        }
        // Every descriptor the header names, under the name the successor
        // maps back to it. A connection is stored already (as it was
        // admitted); storing it again is a no-op for systemd, and covers
        // one accepted but not yet admitted.
        for descriptor in kept where descriptor.role != .listener {
            let name = descriptor.connection.map(ConnectionStore.name) ?? ConnectionStore.carriedName(descriptor.fd)
            guard store.storeReporting(descriptor.fd, name) else { return undo("systemd did not take \(name) into the fd store") }
            stored.append(name)
        }
        let memfd: Int32
        do {
            memfd = try SealedMemfd.create(bytes, name: "mediatord-handover")
        } catch {
            return undo("\(error)")
        }
        defer { close(memfd) }
        guard store.storeReporting(memfd, ConnectionStore.handOverName) else {
            return undo("systemd did not take the hand-over into the fd store")
        }
        stored.append(ConnectionStore.handOverName)
        // The process must not exit before systemd holds all of it.
        guard store.barrier() else { return undo("systemd did not confirm the fd store (sd_notify_barrier)") }
        logger.notice(
            "restart: everything handed to the next daemon through the fd store", metadata: [
                "connections": "\(sockets.connections.count)", "calls_in_flight": "\(snapshot.calls.count)",
                "handover_bytes": "\(bytes.count)", "descriptors": "\(kept.count)",
                "component_processes": "\(processes.count)",
            ])
        // This process owns nothing now: its copies close as it exits, systemd's stay.
        self.server = nil
        return .handedOver(connections: sockets.connections.count, calls: snapshot.calls.count)
    }

    /// The hand-over did not happen: the sockets come back, and the stop goes on as a stop.
    private func takeSocketsBack(_ sockets: LineServerHandOver, _ reason: String) {
        logger.warning("restart: the hand-over through the fd store failed; stopping as for a stop", metadata: ["error": "\(reason)"])
        do {
            server = try LineServer(
                loop: loop, adopting: sockets, maxLineBytes: broker.configuration.maxFrameBytes, handlers: lineHandlers())
        } catch {
            logger.critical("after a failed hand-over the sockets cannot be taken back", metadata: ["error": "\(error)"])
        }
    }
}

extension BrokerHost {
    /// After a restart's resumption, the stored connections its hand-over
    /// did not name. When the state carried on they are strays (closed and
    /// dropped from the store: telling every peer to register again would
    /// undo the hand-over); when it could not be read, they are kept as
    /// after a crash (`mediator.reregister`).
    func settleUnclaimedStoredConnections(_ stored: [(name: String, fd: Int32)], after resumption: Resumption) {
        switch resumption {
        case .carriedOn:
            logger.warning("closing connections of the fd store that the hand-over does not name", metadata: ["connections": "\(stored.count)"])
            for (name, fd) in stored {
                connectionStore?.remove(name)
                close(fd)
            }
        case .cleanRestart:
            adoptStoredConnections(stored)
        }
    }
}
