import Logging
import MediatorProtocol
import MediatorSocket
import MediatorSocketHost
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The new image's side of a re-exec (issue 28): carry on from the
/// predecessor's hand-over, or, when its state cannot be read (another
/// version), fall back to a clean restart in which every connection first
/// gets `mediator.restarting`, as at a graceful stop.
extension BrokerHost {
    /// How the new image started.
    enum Resumption: Equatable {
        /// Every connection, call and registration carried on.
        case carriedOn(connections: Int, calls: Int)
        /// The state could not be read: each connection was told
        /// `mediator.restarting` and closed; the daemon serves afresh.
        case cleanRestart(reason: String)
    }

    /// On the loop's thread, after the policy and manifests are loaded and
    /// before anything else is served. Throws only when not even the
    /// listener can be taken: then the daemon cannot serve.
    func resume(from inheritance: ReexecInheritance) throws(ReexecError) -> Resumption {
        let handOver: ReexecHandOver
        switch inheritance.handOver {
        case .success(let box): handOver = box.value
        case .failure(let error): return try restartCleanly(inheritance.descriptors, reason: error)
        }
        // Kept alive here: if decoding refuses them they are not closed,
        // and the clean restart still reaches every peer.
        let owned = handOver.descriptors.map { OwnedDescriptor(taking: $0.fd) }
        let sockets: LineServerHandOver
        do {
            sockets = try LineServerHandOver.decode(handOver.sockets, descriptors: owned)
        } catch {
            defer { for descriptor in owned { _ = descriptor.take() } }
            return try restartCleanly(handOver.descriptors, reason: .sockets(error))
        }
        guard let listener = sockets.listener.rawValue else { throw .handOver("no listener") }
        boundPath = handOver.host.boundPath
        advertisedPath = handOver.host.advertisedPath
        reexecs = handOver.host.reexecs
        do {
            try prepareParts(listenerDescriptor: listener)
        } catch {
            throw .unavailable("\(error)")
        }
        let now = NIODeadline.now()
        let restored: [BrokerEffect]
        do {
            restored = try broker.restore(try BrokerSnapshot.decode(handOver.broker), now: now)
        } catch {
            return try adoptForCleanRestart(
                sockets, requesters: handOver.host.requesters, processes: handOver.host.processes,
                inheritanceOrigin: inheritance.origin, reason: .snapshot(error))
        }
        descriptors = DescriptorTable(resuming: handOver.host.descriptors)
        admitRestoredPeers()
        do {
            server = try LineServer(
                loop: loop, adopting: sockets, maxLineBytes: broker.configuration.maxFrameBytes, handlers: lineHandlers())
        } catch {
            throw .sockets(error)
        }
        apply(restored)
        // After a restart they run on (KillMode=process): their pidfds and
        // pipes are in the fd store. One that ended during the restart left
        // no exit status: unexplained, so it counts as a failure.
        let fromStore = inheritance.origin == .fdStore
        adoptProcesses(handOver.host.processes, fromStore: fromStore, goneAs: fromStore ? .unobserved : .signaled(0))
        answerReexec(handOver.host.requesters, .success([
            "pid": .int(Int64(getpid())), "version": .string(MediatorVersion.current), "reexecs": .int(Int64(reexecs)),
        ]))
        return .carriedOn(connections: sockets.connections.count, calls: broker.inFlight.count)
    }

    /// The sockets could be adopted, the broker's state not: each
    /// connection gets `mediator.restarting` after what was queued for it
    /// (and a `mediator/reexec` caller its answer first, saying so), then closes.
    private func adoptForCleanRestart(
        _ sockets: LineServerHandOver, requesters: [HostHandOverState.Requester], processes: [ComponentProcesses.HandOver],
        inheritanceOrigin: ReexecInheritance.Origin, reason: ReexecError
    ) throws(ReexecError) -> Resumption {
        let connections = sockets.connections.map(\.id)
        do {
            server = try LineServer(
                loop: loop, adopting: sockets, maxLineBytes: broker.configuration.maxFrameBytes, handlers: lineHandlers())
        } catch {
            throw .sockets(error)
        }
        // After a re-exec still this process's children: watched and read
        // on, their ends unknown to the fresh broker. After a restart they
        // stay in `storedProcesses`, to be ended (endUnclaimedStoredProcesses).
        if inheritanceOrigin != .fdStore { adoptProcesses(processes) }
        for requester in requesters {
            guard let idBytes = requester.idBytes else { continue }
            let answer = broker.reexecAnswerLine(idBytes: idBytes, cleanRestart: "\(reason)")
            answer.withUnsafeReadableBytes { _ = server?.send(requester.connection, lineWithLF: $0) }
        }
        let line = broker.restartingLine(reason: Broker.handOverRefusedReason)
        for connection in connections {
            line.withUnsafeReadableBytes { _ = server?.send(connection, lineWithLF: $0) }
            // Not admitted here, so its close does not reach the fd store: out of it now.
            connectionStore?.remove(ConnectionStore.name(connection))
            server?.close(connection)
        }
        logger.warning(
            "re-exec: the predecessor's state cannot be read; clean restart",
            metadata: ["error": "\(reason)", "connections": "\(connections.count)"])
        return .cleanRestart(reason: "\(reason)")
    }

    /// Not even the sockets' hand-over can be read: by the descriptors'
    /// roles alone, each connection gets a `mediator.restarting` line
    /// (after an LF that ends any line half written) and is closed, and the
    /// listener serves afresh.
    private func restartCleanly(_ listed: [ReexecHandOver.Descriptor], reason: ReexecError) throws(ReexecError) -> Resumption {
        guard let listener = listed.first(where: { $0.role == .listener })?.fd else {
            throw .handOver("no listener among the descriptors handed over (\(reason))")
        }
        var line = [UInt8(ascii: "\n")]
        broker.restartingLine(reason: Broker.handOverRefusedReason).withUnsafeReadableBytes { line += $0 }
        for descriptor in listed where descriptor.role != .listener {
            if descriptor.role == .connection {
                _ = line.withUnsafeBytes { send(descriptor.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
                if let connection = descriptor.connection { connectionStore?.remove(ConnectionStore.name(connection)) }
            }
            close(descriptor.fd)
        }
        do {
            let adopted = try UnixListener(adopting: OwnedDescriptor(taking: listener))
            try start(listener: adopted, listenerDescriptor: listener)
        } catch {
            throw .unavailable("the listener handed over cannot be served: \(error)")
        }
        logger.warning(
            "re-exec: the predecessor's hand-over cannot be read; clean restart",
            metadata: ["error": "\(reason)", "connections": "\(listed.filter { $0.role == .connection }.count)"])
        return .cleanRestart(reason: "\(reason)")
    }

    /// The component processes the predecessor started: their output is
    /// read on, and their ends reach the broker as the spawner's would have.
    private func adoptProcesses(_ handed: [ComponentProcesses.HandOver], fromStore: Bool = false, goneAs: ProcessEnd = .signaled(0)) {
        // A re-exec's processes are this process's children; a restart's come with the fd store's pidfds.
        var stored: [Int: StoredProcess]? = fromStore ? (storedProcesses ?? [:]) : nil
        processes.adopt(handed, stored: &stored, goneAs: goneAs) { [unowned self] spawnID, end in
            apply(broker.processExited(spawnID: spawnID, end: end, now: .now()))
        }
        if fromStore { storedProcesses = stored }
    }
}
