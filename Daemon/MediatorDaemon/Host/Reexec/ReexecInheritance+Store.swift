import Logging
#if canImport(Glibc)
import Glibc
#endif

/// The next daemon's side of a `systemctl restart` (issue 28): the
/// predecessor put its hand-over memfd into the fd store as `handover`,
/// beside the connections (`connection-ID`) and the descriptors they
/// carried (`handover-fd-N`). systemd passes them in with other numbers,
/// so the header's descriptors are mapped to them by name; then the
/// daemon resumes exactly as after a re-exec (BrokerHost+Resume.swift).
extension ReexecInheritance {
    /// What is left of the stored descriptors once the hand-over took its own.
    package struct FromStore: Sendable {
        package var inheritance: ReexecInheritance
        /// Stored connections the hand-over does not name: for the crash path.
        package var unclaimed: [(name: String, fd: Int32)]
    }

    /// `memfd` is the descriptor stored as `handover`, `listener` the socket
    /// unit's, `stored` the rest by name. The memfd and the carried
    /// descriptors leave the store at once (`remove`), so that a crash of
    /// this daemon does not find a stale hand-over; the connections stay.
    package static func fromStore(
        memfd: Int32, listener: Int32, stored: [(name: String, fd: Int32)], remove: (String) -> Void, logger: Logger
    ) -> FromStore {
        let bytes: Result<[UInt8], ReexecError>
        do {
            bytes = .success(try SealedMemfd.read(memfd, limit: ReexecHandOver.maxEncodedBytes))
        } catch {
            bytes = .failure(error)
        }
        close(memfd)
        remove(ConnectionStore.handOverName)
        for (name, _) in stored where name.hasPrefix(ConnectionStore.carriedPrefix) { remove(name) }

        var byName: [String: Int32] = [:]
        for (name, fd) in stored { byName[name] = fd }
        var misses: Set<Int32> = []
        /// Whether `take` found nothing for this one (a stand-in took its place).
        func byNameMissed(_ descriptor: ReexecHandOver.Descriptor) -> Bool { misses.contains(descriptor.fd) }
        /// The descriptor stored for one the header lists, taken out of `byName`.
        func take(_ descriptor: ReexecHandOver.Descriptor) -> Int32? {
            let found = lookUp(descriptor)
            if found == nil { misses.insert(descriptor.fd) }
            return found
        }
        func lookUp(_ descriptor: ReexecHandOver.Descriptor) -> Int32? {
            switch descriptor.role {
            case .listener: return listener
            case .connection:
                guard let connection = descriptor.connection else { return nil }
                return byName.removeValue(forKey: ConnectionStore.name(connection))
            case .carried: return byName.removeValue(forKey: ConnectionStore.carriedName(descriptor.fd))
            }
        }
        /// What is not claimed: connections go on to the crash path, carried ones are closed.
        func leftOver() -> [(name: String, fd: Int32)] {
            var unclaimed: [(name: String, fd: Int32)] = []
            for (name, fd) in byName.sorted(by: { $0.key < $1.key }) {
                if ConnectionStore.connection(named: name) != nil {
                    unclaimed.append((name, fd))
                } else {
                    close(fd)
                }
            }
            return unclaimed
        }

        guard case .success(let content) = bytes, let listed = ReexecHandOver.descriptors(in: content) else {
            // Nothing names the descriptors: the connections are kept as after a crash.
            let reason: ReexecError
            if case .failure(let error) = bytes { reason = error } else { reason = .handOver("its descriptors cannot be read") }
            logger.warning("the fd store's hand-over cannot be read; its connections are kept as after a crash", metadata: ["error": "\(reason)"])
            let inheritance = ReexecInheritance(
                handOver: .failure(reason), descriptors: [ReexecHandOver.Descriptor(fd: listener, role: .listener)], origin: .fdStore)
            return FromStore(inheritance: inheritance, unclaimed: leftOver())
        }
        var mapped: [ReexecHandOver.Descriptor] = []
        var oldToNew: [Int32: Int32] = [:]
        var missing: [String] = []
        var hungUp: [String] = []
        for descriptor in listed {
            let what = descriptor.connection.map { "connection \($0)" } ?? "\(descriptor.role.rawValue) fd \(descriptor.fd)"
            // systemd drops a stored descriptor that reports a hang-up (its
            // peer ended during the restart): a socket whose other end is
            // closed stands in, so the broker sees that peer go as it went.
            guard let fd = take(descriptor) ?? (descriptor.role == .listener ? nil : hungUpStandIn()) else {
                missing.append(what)
                continue
            }
            if byNameMissed(descriptor) { hungUp.append(what) }
            oldToNew[descriptor.fd] = fd
            mapped.append(ReexecHandOver.Descriptor(fd: fd, role: descriptor.role, connection: descriptor.connection))
        }
        let unclaimed = leftOver()
        CloseOnExec.set(true, on: mapped.map(\.fd))
        if !hungUp.isEmpty {
            logger.notice(
                "restart: descriptors that ended meanwhile are not in the fd store; they are handed on as hung up",
                metadata: ["descriptors": "\(hungUp.prefix(10).joined(separator: ", "))", "count": "\(hungUp.count)"])
        }
        guard missing.isEmpty else {
            // The sockets' hand-over refers to every descriptor: without one
            // it cannot be adopted, so the resumption falls back (closing each).
            let reason = ReexecError.handOver("not in the fd store: \(missing.prefix(5).joined(separator: ", "))")
            return FromStore(inheritance: ReexecInheritance(handOver: .failure(reason), descriptors: mapped, origin: .fdStore), unclaimed: unclaimed)
        }
        do {
            var handOver = try ReexecHandOver.decode(content)
            handOver.descriptors = mapped
            handOver.host.processes = handOver.host.processes.map { process in
                var process = process
                process.stdout = process.stdout.flatMap { oldToNew[$0] }
                process.stderr = process.stderr.flatMap { oldToNew[$0] }
                return process
            }
            return FromStore(
                inheritance: ReexecInheritance(handOver: .success(ReexecHandOverBox(value: handOver)), descriptors: mapped, origin: .fdStore),
                unclaimed: unclaimed)
        } catch {
            return FromStore(inheritance: ReexecInheritance(handOver: .failure(error), descriptors: mapped, origin: .fdStore), unclaimed: unclaimed)
        }
    }

    /// One end of a new socket pair whose other end is closed: reads end at
    /// once and writes fail, as on a connection whose peer went. Nil when
    /// no socket can be made.
    static func hungUpStandIn() -> Int32? {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { return nil }
        close(ends[1])
        return ends[0]
    }
}
