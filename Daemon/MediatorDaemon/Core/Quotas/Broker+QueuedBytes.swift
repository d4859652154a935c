import MediatorConfiguration
import Logging
import MediatorProtocol

/// The quota on bytes queued toward a uid's connections,
/// `max_queued_bytes_per_uid`. The per-connection limit (`max_outbound_bytes`)
/// bounds one stalled peer; a uid with many connections could still hold
/// many times that, so its connections count together, as dbus-broker counts
/// a user's queued bytes.
///
/// The broker does no I/O: its host measures what each connection's socket
/// has not taken and reports changes through ``queued(_:bytes:)``; the
/// figures and episodes live in ``QuotaLedger``. Past the
/// quota the daemon stops adding to the backlog where it may refuse: calls
/// routed to the uid's components are answered `overloaded`, events (and
/// monitor records) to its connections are skipped. What it may not refuse,
/// responses to a caller that does not read, is bounded by a ceiling of twice
/// the quota, at which the uid's connection with the largest backlog is
/// disconnected. Warnings go out when a uid passes the quota, not per
/// message, so that a flood does not flood the log as well.
extension Broker {
    /// The bytes queued toward `connection` that its socket has not taken are
    /// now `bytes`. Returns the disconnections the ceiling asks for.
    package func queued(_ connection: ConnectionID, bytes: Int) -> [BrokerEffect] {
        guard let uid = peers[connection]?.credentials.uid, uid != 0 else { return [] }
        let notices = quotas.setQueued(connection, uid: uid, bytes: bytes, limit: configuration.maxQueuedBytesPerUID)
        guard !notices.isEmpty else { return [] }
        carryOut(notices)
        return takeEffects()
    }

    /// `overloaded` for a call that would go to `connection` while its uid is
    /// past the quota. One emptiness check when nobody is backlogged.
    func queueQuotaRefusal(toward connection: ConnectionID, target: String) -> MediatorError? {
        guard !quotas.nothingQueued, let uid = peers[connection]?.credentials.uid else { return nil }
        let limit = configuration.maxQueuedBytesPerUID
        var notices: [QuotaLedger.QueueNotice] = []
        guard quotas.refusesCall(toward: uid, limit: limit, &notices) else { return nil }
        carryOut(notices)
        statistics.quotaRefused(uid: uid, quota: Quota.queuedBytes.rawValue)
        return MediatorError(
            .overloaded,
            "uid \(uid) reached its quota \(Quota.queuedBytes.rawValue) = \(limit) (messages queued toward the uid serving \"\(target)\")",
            data: ["quota": .string(Quota.queuedBytes.rawValue), "limit": .int(Int64(limit))])
    }

    /// Whether an event for a connection of `uid` is skipped: the uid is past the quota.
    func skipsEvent(toward uid: UInt32) -> Bool {
        guard !quotas.nothingQueued else { return false }
        var notices: [QuotaLedger.QueueNotice] = []
        guard quotas.skipsEvent(toward: uid, limit: configuration.maxQueuedBytesPerUID, &notices) else { return false }
        carryOut(notices)
        return true
    }

    /// Logs what the ledger says happened, and closes what it asks to close.
    func carryOut(_ notices: [QuotaLedger.QueueNotice]) {
        let quota = Quota.queuedBytes.rawValue
        let limit = configuration.maxQueuedBytesPerUID
        for notice in notices {
            switch notice {
            case .episodeBegan(let uid, let queuedBytes, let culprit):
                var metadata: Logger.Metadata = [
                    "quota": "\(quota)", "limit": "\(limit)", "uid": "\(uid)", "queued_bytes": "\(queuedBytes)",
                ]
                if let culprit, let credentials = peers[culprit]?.credentials {
                    metadata["pid"] = "\(credentials.pid)"
                    metadata["exe"] = "\(credentials.executable ?? "unknown")"
                    metadata["connection"] = "\(culprit)"
                }
                logger.warning(
                    "quota reached: calls to this uid's components are refused and events to it skipped", metadata: metadata)
            case .episodeEnded(let uid, let episode, let queuedBytes):
                logger.notice(
                    "back under quota",
                    metadata: [
                        "quota": "\(quota)", "uid": "\(uid)", "queued_bytes": "\(queuedBytes)",
                        "refused_calls": "\(episode.refusedCalls)", "skipped_events": "\(episode.skippedEvents)",
                    ])
            case .disconnect(let connection, let uid, let queuedBytes, let uidQueuedBytes):
                let credentials = peers[connection]?.credentials
                logger.warning(
                    "disconnecting the connection that reads least: its uid's queued bytes passed twice the quota",
                    metadata: [
                        "quota": "\(quota)", "limit": "\(limit)", "uid": "\(uid)",
                        "pid": "\(credentials.map { "\($0.pid)" } ?? "unknown")",
                        "exe": "\(credentials?.executable ?? "unknown")",
                        "connection": "\(connection)", "queued_bytes": "\(queuedBytes)", "uid_queued_bytes": "\(uidQueuedBytes)",
                    ])
                effects.append(.close(connection))
                statistics.daemon.backlogDisconnects += 1
            }
        }
    }
}
