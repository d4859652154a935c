import Logging
import MediatorProtocol

/// The quota on bytes queued toward a uid's connections,
/// `max_queued_bytes_per_uid`. The per-connection limit (`max_outbound_bytes`)
/// bounds one stalled peer; a uid with many connections could still hold
/// many times that, so its connections count together, as dbus-broker counts
/// a user's queued bytes.
///
/// The broker does no I/O: its host measures what each connection's socket
/// has not taken and reports changes through ``queued(_:bytes:)``. Past the
/// quota the daemon stops adding to the backlog where it may refuse: calls
/// routed to the uid's components are answered `overloaded`, events (and
/// monitor records) to its connections are skipped. What it may not refuse,
/// responses to a caller that does not read, is bounded by a ceiling of twice
/// the quota, at which the uid's connection with the largest backlog is
/// disconnected. Warnings go out when a uid passes the quota, not per
/// message, so that a flood does not flood the log as well.
extension Broker {
    /// What a uid's time past the quota cost it, logged when it is back under.
    struct QueueQuotaEpisode {
        var refusedCalls = 0
        var skippedEvents = 0
    }

    /// The bytes queued toward `connection` that its socket has not taken are
    /// now `bytes`. Returns the disconnections the ceiling asks for.
    public func queued(_ connection: ConnectionID, bytes: Int) -> [BrokerEffect] {
        guard let peer = peers[connection], peer.credentials.uid != 0, peer.queuedBytes != bytes else { return [] }
        let uid = peer.credentials.uid
        peers[connection]?.queuedBytes = bytes
        adjustQueued(uid: uid, by: bytes - peer.queuedBytes)
        if isOverQueueQuota(uid) { beginQueueQuotaEpisode(uid) }
        enforceQueueCeiling(uid)
        guard !effects.isEmpty else { return [] }
        return takeEffects()
    }

    /// `overloaded` for a call that would go to `connection` while its uid is
    /// past the quota. One emptiness check when nobody is backlogged.
    func queueQuotaRefusal(toward connection: ConnectionID, target: String) -> MediatorError? {
        guard !queuedByUID.isEmpty, let uid = peers[connection]?.credentials.uid, isOverQueueQuota(uid) else { return nil }
        beginQueueQuotaEpisode(uid)
        queueQuotaEpisodes[uid]?.refusedCalls += 1
        statistics.quotaRefused(uid: uid, quota: Quota.queuedBytes.rawValue)
        let limit = configuration.maxQueuedBytesPerUID
        return MediatorError(
            .overloaded,
            "uid \(uid) reached its quota \(Quota.queuedBytes.rawValue) = \(limit) (messages queued toward the uid serving \"\(target)\")",
            data: ["quota": .string(Quota.queuedBytes.rawValue), "limit": .int(Int64(limit))])
    }

    /// Whether an event for a connection of `uid` is skipped: the uid is past the quota.
    func skipsEvent(toward uid: UInt32) -> Bool {
        guard !queuedByUID.isEmpty, isOverQueueQuota(uid) else { return false }
        beginQueueQuotaEpisode(uid)
        queueQuotaEpisodes[uid]?.skippedEvents += 1
        return true
    }

    func isOverQueueQuota(_ uid: UInt32) -> Bool {
        (queuedByUID[uid] ?? 0) > configuration.maxQueuedBytesPerUID
    }

    /// A closed connection's backlog is gone with it.
    func forgetQueued(_ peer: Peer, _ connection: ConnectionID) {
        let uid = peer.credentials.uid
        if peer.queuedBytes != 0 { adjustQueued(uid: uid, by: -peer.queuedBytes) }
        if connectionsByUID[uid] == nil { endQueueQuotaEpisode(uid) }
    }

    private func adjustQueued(uid: UInt32, by delta: Int) {
        let total = (queuedByUID[uid] ?? 0) + delta
        queuedByUID[uid] = total > 0 ? total : nil
        // Back under half the quota ends the episode: a backlog that hovers
        // around the quota logs once, not at every crossing.
        if total <= configuration.maxQueuedBytesPerUID / 2 { endQueueQuotaEpisode(uid) }
    }

    /// The uid's connection with the largest backlog: the one that reads least.
    private func largestBacklog(of uid: UInt32) -> (connection: ConnectionID, peer: Peer)? {
        var largest: (connection: ConnectionID, peer: Peer)?
        for connection in connectionsByUID[uid] ?? [] {
            guard let peer = peers[connection], peer.queuedBytes > (largest?.peer.queuedBytes ?? 0) else { continue }
            largest = (connection, peer)
        }
        return largest
    }

    private func beginQueueQuotaEpisode(_ uid: UInt32) {
        guard queueQuotaEpisodes[uid] == nil else { return }
        queueQuotaEpisodes[uid] = QueueQuotaEpisode()
        var metadata: Logger.Metadata = [
            "quota": "\(Quota.queuedBytes.rawValue)", "limit": "\(configuration.maxQueuedBytesPerUID)", "uid": "\(uid)",
            "queued_bytes": "\(queuedByUID[uid] ?? 0)",
        ]
        if let culprit = largestBacklog(of: uid) {
            metadata["pid"] = "\(culprit.peer.credentials.pid)"
            metadata["exe"] = "\(culprit.peer.credentials.executable ?? "unknown")"
            metadata["connection"] = "\(culprit.connection)"
        }
        logger.warning("quota reached: calls to this uid's components are refused and events to it skipped", metadata: metadata)
    }

    private func endQueueQuotaEpisode(_ uid: UInt32) {
        guard let episode = queueQuotaEpisodes.removeValue(forKey: uid) else { return }
        logger.notice(
            "back under quota",
            metadata: [
                "quota": "\(Quota.queuedBytes.rawValue)", "uid": "\(uid)", "queued_bytes": "\(queuedByUID[uid] ?? 0)",
                "refused_calls": "\(episode.refusedCalls)", "skipped_events": "\(episode.skippedEvents)",
            ])
    }

    /// Past twice the quota, what the daemon could not refuse has piled up:
    /// the connections with the largest backlogs go until the uid is under it.
    private func enforceQueueCeiling(_ uid: UInt32) {
        let limit = configuration.maxQueuedBytesPerUID
        let ceiling = limit > Int.max / 2 ? Int.max : limit * 2
        while (queuedByUID[uid] ?? 0) > ceiling, let culprit = largestBacklog(of: uid) {
            logger.warning(
                "disconnecting the connection that reads least: its uid's queued bytes passed twice the quota",
                metadata: [
                    "quota": "\(Quota.queuedBytes.rawValue)", "limit": "\(limit)", "uid": "\(uid)",
                    "pid": "\(culprit.peer.credentials.pid)", "exe": "\(culprit.peer.credentials.executable ?? "unknown")",
                    "connection": "\(culprit.connection)", "queued_bytes": "\(culprit.peer.queuedBytes)",
                    "uid_queued_bytes": "\(queuedByUID[uid] ?? 0)",
                ])
            // Closing drops what was queued; its figure goes now so it is not picked twice.
            peers[culprit.connection]?.queuedBytes = 0
            adjustQueued(uid: uid, by: -culprit.peer.queuedBytes)
            effects.append(.close(culprit.connection))
            statistics.daemon.backlogDisconnects += 1
        }
    }
}
