/// The per-uid bookkeeping behind the quotas, as dbus-broker's user
/// registry keeps it: each uid's connections, the bytes queued toward each
/// connection and uid, the episodes of a uid past its queued-bytes quota,
/// and which refusals were already logged. It owns this state alone; the
/// broker measures what the other parts hold (calls, subscriptions,
/// registrations) and asks it. Pure: it logs nothing and counts nothing,
/// it answers with what happened (``QueueNotice``) and the broker logs,
/// counts and closes.
struct QuotaLedger {
    enum Quota: String {
        case connections = "max_connections_per_uid"
        case callsInFlight = "max_calls_in_flight_per_uid"
        case subscriptions = "max_subscriptions_per_uid"
        case registrations = "max_registrations_per_uid"
        case queuedBytes = "max_queued_bytes_per_uid"
        case pendingBytes = "max_pending_bytes_per_uid"
        case registeredBytes = "max_registered_bytes_per_uid"
        case fdsInFlight = "max_fds_in_flight_per_uid"
    }

    /// A uid that met one quota and was told so in the log.
    struct Warning: Hashable {
        var uid: UInt32
        var quota: Quota
    }

    /// What a uid's time past the queued-bytes quota cost it, logged when it is back under.
    struct QueueEpisode: Equatable {
        var refusedCalls = 0
        var skippedEvents = 0
    }

    /// What the queued-bytes bookkeeping did, in order, for the broker to
    /// log and carry out.
    enum QueueNotice: Equatable {
        /// The uid passed the quota; `culprit` is its connection with the largest backlog.
        case episodeBegan(uid: UInt32, queuedBytes: Int, culprit: ConnectionID?)
        /// The uid is back under half the quota, or has no connection left.
        case episodeEnded(uid: UInt32, QueueEpisode, queuedBytes: Int)
        /// Past twice the quota: this connection, the one that reads least, is to be closed.
        case disconnect(ConnectionID, uid: UInt32, queuedBytes: Int, uidQueuedBytes: Int)
    }

    /// Each uid's connections (uid 0 too: only the checks skip it).
    private(set) var connectionsByUID: [UInt32: Set<ConnectionID>] = [:]
    /// Bytes queued toward a connection that its socket has not taken, as
    /// the host last measured; only nonzero figures, never uid 0's.
    private var queuedByConnection: [ConnectionID: Int] = [:]
    /// The sums by uid, only the nonzero ones, so that routing pays one
    /// emptiness check when no one is backlogged.
    private(set) var queuedByUID: [UInt32: Int] = [:]
    /// The uids past their queued-bytes quota.
    private(set) var queueEpisodes: [UInt32: QueueEpisode] = [:]
    /// A refusal is logged once per episode, the next once the uid fits again.
    private var warned: Set<Warning> = []

    // MARK: - Connections

    mutating func admit(_ connection: ConnectionID, uid: UInt32) {
        connectionsByUID[uid, default: []].insert(connection)
    }

    /// Forgets a closed connection and its backlog.
    mutating func remove(_ connection: ConnectionID, uid: UInt32, queueLimit: Int) -> [QueueNotice] {
        connectionsByUID[uid]?.remove(connection)
        if connectionsByUID[uid]?.isEmpty == true { connectionsByUID[uid] = nil }
        var notices: [QueueNotice] = []
        if let bytes = queuedByConnection.removeValue(forKey: connection) {
            adjustQueued(uid: uid, by: -bytes, limit: queueLimit, &notices)
        }
        if connectionsByUID[uid] == nil { endEpisode(uid, &notices) }
        return notices
    }

    func connections(of uid: UInt32) -> Set<ConnectionID> {
        connectionsByUID[uid] ?? []
    }

    // MARK: - Counted quotas

    enum Check: Equatable {
        case fits
        /// Refused; `firstOfEpisode` when the log has not said so since the uid last fitted.
        case refused(firstOfEpisode: Bool)
    }

    /// Whether `adding` more of a quota of which the uid uses `used` fits
    /// under `limit`. uid 0 always fits.
    mutating func check(_ quota: Quota, uid: UInt32, used: Int, adding: Int, limit: Int) -> Check {
        guard uid != 0 else { return .fits }
        let warning = Warning(uid: uid, quota: quota)
        guard used + adding > limit else {
            // Back under it: the next refusal is a new episode. One check when none is under way.
            if !warned.isEmpty { warned.remove(warning) }
            return .fits
        }
        return .refused(firstOfEpisode: warned.insert(warning).inserted)
    }

    // MARK: - Queued bytes

    /// Whether no connection has bytes queued: routing's whole cost when nobody is backlogged.
    var nothingQueued: Bool { queuedByUID.isEmpty }

    func queuedBytes(uid: UInt32) -> Int { queuedByUID[uid] ?? 0 }

    func queuedBytes(of connection: ConnectionID) -> Int { queuedByConnection[connection] ?? 0 }

    func isOverQueueQuota(_ uid: UInt32, limit: Int) -> Bool {
        queuedBytes(uid: uid) > limit
    }

    /// The bytes queued toward `connection` (of `uid`, not 0) are now `bytes`.
    mutating func setQueued(_ connection: ConnectionID, uid: UInt32, bytes: Int, limit: Int) -> [QueueNotice] {
        let old = queuedBytes(of: connection)
        guard uid != 0, old != bytes else { return [] }
        queuedByConnection[connection] = bytes > 0 ? bytes : nil
        var notices: [QueueNotice] = []
        adjustQueued(uid: uid, by: bytes - old, limit: limit, &notices)
        if isOverQueueQuota(uid, limit: limit) { beginEpisode(uid, &notices) }
        enforceCeiling(uid, limit: limit, &notices)
        return notices
    }

    /// Whether a call toward a connection of `uid` is refused: the uid is
    /// past the quota. Counted in its episode.
    mutating func refusesCall(toward uid: UInt32, limit: Int, _ notices: inout [QueueNotice]) -> Bool {
        guard !queuedByUID.isEmpty, isOverQueueQuota(uid, limit: limit) else { return false }
        beginEpisode(uid, &notices)
        queueEpisodes[uid]?.refusedCalls += 1
        return true
    }

    /// Whether an event toward a connection of `uid` is skipped: the uid is
    /// past the quota. Counted in its episode.
    mutating func skipsEvent(toward uid: UInt32, limit: Int, _ notices: inout [QueueNotice]) -> Bool {
        guard !queuedByUID.isEmpty, isOverQueueQuota(uid, limit: limit) else { return false }
        beginEpisode(uid, &notices)
        queueEpisodes[uid]?.skippedEvents += 1
        return true
    }

    private mutating func adjustQueued(uid: UInt32, by delta: Int, limit: Int, _ notices: inout [QueueNotice]) {
        let total = queuedBytes(uid: uid) + delta
        queuedByUID[uid] = total > 0 ? total : nil
        // Back under half the quota ends the episode: a backlog that hovers
        // around the quota logs once, not at every crossing.
        if total <= limit / 2 { endEpisode(uid, &notices) }
    }

    /// The uid's connection with the largest backlog: the one that reads least.
    private func largestBacklog(of uid: UInt32) -> (connection: ConnectionID, bytes: Int)? {
        var largest: (connection: ConnectionID, bytes: Int)?
        for connection in connectionsByUID[uid] ?? [] {
            let bytes = queuedBytes(of: connection)
            guard bytes > (largest?.bytes ?? 0) else { continue }
            largest = (connection, bytes)
        }
        return largest
    }

    private mutating func beginEpisode(_ uid: UInt32, _ notices: inout [QueueNotice]) {
        guard queueEpisodes[uid] == nil else { return }
        queueEpisodes[uid] = QueueEpisode()
        notices.append(.episodeBegan(uid: uid, queuedBytes: queuedBytes(uid: uid), culprit: largestBacklog(of: uid)?.connection))
    }

    /// An episode under way when a snapshot was taken (Core/Snapshot): it
    /// goes on counting, and ends when the host's first measure finds the
    /// uid back under half the quota.
    mutating func restoreEpisode(uid: UInt32, _ episode: QueueEpisode) {
        queueEpisodes[uid] = episode
    }

    private mutating func endEpisode(_ uid: UInt32, _ notices: inout [QueueNotice]) {
        guard let episode = queueEpisodes.removeValue(forKey: uid) else { return }
        notices.append(.episodeEnded(uid: uid, episode, queuedBytes: queuedBytes(uid: uid)))
    }

    /// Past twice the quota, what the daemon could not refuse has piled up:
    /// the connections with the largest backlogs go until the uid is under it.
    private mutating func enforceCeiling(_ uid: UInt32, limit: Int, _ notices: inout [QueueNotice]) {
        let ceiling = limit > Int.max / 2 ? Int.max : limit * 2
        while queuedBytes(uid: uid) > ceiling, let culprit = largestBacklog(of: uid) {
            notices.append(
                .disconnect(culprit.connection, uid: uid, queuedBytes: culprit.bytes, uidQueuedBytes: queuedBytes(uid: uid)))
            // Closing drops what was queued; its figure goes now so it is not picked twice.
            queuedByConnection[culprit.connection] = nil
            adjustQueued(uid: uid, by: -culprit.bytes, limit: limit, &notices)
        }
    }

    // MARK: - Storage

    /// Rebuilds the tables that a burst left mostly empty; says whether any was.
    mutating func shrinkIfSparse() -> Bool {
        var shrank = connectionsByUID.shrinkIfSparse()
        for uid in Array(connectionsByUID.keys) {
            shrank = connectionsByUID[uid]?.shrinkIfSparse() == true || shrank
        }
        shrank = queuedByConnection.shrinkIfSparse() || shrank
        return shrank
    }
}
