import MediatorConfiguration
import Logging
import MediatorProtocol

/// Per-uid quotas: connections, calls in flight (held ones included),
/// subscriptions, registrations, bytes queued toward the uid (its own file,
/// Broker+QueuedBytes.swift). An overrun answers `overloaded` naming the
/// quota and its value, and the log names the culprit (uid, pid, executable),
/// which dbus-broker's users miss in its logs.
extension Broker {
    typealias Quota = QuotaLedger.Quota

    func limit(_ quota: Quota) -> Int {
        switch quota {
        case .connections: return configuration.maxConnectionsPerUID
        case .callsInFlight: return configuration.maxCallsInFlightPerUID
        case .subscriptions: return configuration.maxSubscriptionsPerUID
        case .registrations: return configuration.maxRegistrationsPerUID
        case .queuedBytes: return configuration.maxQueuedBytesPerUID
        case .pendingBytes: return configuration.maxPendingBytesPerUID
        case .registeredBytes: return configuration.maxRegisteredBytesPerUID
        case .fdsInFlight: return configuration.maxFdsInFlightPerUID
        }
    }

    /// How much of a quota the uid uses now, measured in the parts that hold it.
    func usage(_ quota: Quota, uid: UInt32) -> Int {
        let connections = quotas.connections(of: uid)
        switch quota {
        case .connections: return connections.count
        case .callsInFlight: return connections.reduce(0) { $0 + callsInFlight(of: $1) }
        case .subscriptions: return connections.reduce(0) { $0 + (peers[$1]?.patterns.count ?? 0) }
        case .registrations: return connections.reduce(0) { $0 + (peers[$1]?.targets.count ?? 0) }
        case .queuedBytes: return quotas.queuedBytes(uid: uid)
        case .pendingBytes:
            return connections.reduce(0) { $0 + inFlight.bytesHeld(of: $1) + activation.heldCalls.bytes(of: $1) + reregistrationHold.index.bytes(of: $1) }
        case .registeredBytes:
            return connections.reduce(0) { total, connection in
                total + (peers[connection]?.registeredBytes.values.reduce(0, +) ?? 0)
            }
        case .fdsInFlight: return descriptorsHeld?(uid) ?? 0
        }
    }

    /// The quota on descriptors in flight, for a message from `uid` that
    /// carries `count` of them. The host has counted them already (they
    /// arrived), so the message fits when the total with them stays within
    /// the limit.
    func descriptorQuotaRefusal(_ credentials: PeerCredentials) -> MediatorError? {
        guard credentials.uid != 0, descriptorsHeld != nil else { return nil }
        return quotaExceeded(.fdsInFlight, credentials: credentials, adding: 0)
    }

    /// The per-connection limit, then the per-uid quotas, for one more call
    /// that keeps `bytes` while pending (its id; a held call's params too).
    func callLimitRefusal(_ connection: ConnectionID, uid: UInt32, bytes: Int) -> MediatorError? {
        if callsInFlight(of: connection) >= configuration.maxCallsInFlightPerConnection {
            statistics.quotaRefused(uid: uid, quota: "max_calls_in_flight")
            return MediatorError(
                .overloaded, "this connection has \(configuration.maxCallsInFlightPerConnection) calls in flight, the limit")
        }
        // uid 0 has no quotas: its credentials are not read.
        guard uid != 0, let credentials = credentials(of: connection) else { return nil }
        return quotaExceeded(.callsInFlight, credentials: credentials)
            ?? quotaExceeded(.pendingBytes, credentials: credentials, adding: bytes)
    }

    /// The error for taking `adding` more of a quota, or nil when it fits.
    /// Every refusal is counted (stats, top); the log says it once per
    /// episode, so that a client hammering at its quota cannot flood the journal.
    func quotaExceeded(_ quota: Quota, credentials: PeerCredentials, adding: Int = 1) -> MediatorError? {
        guard credentials.uid != 0 else { return nil }
        let limit = self.limit(quota)
        let used = usage(quota, uid: credentials.uid)
        guard case .refused(let first) = quotas.check(quota, uid: credentials.uid, used: used, adding: adding, limit: limit)
        else { return nil }
        statistics.quotaRefused(uid: credentials.uid, quota: quota.rawValue)
        if first {
            logger.warning(
                "quota reached; further refusals are counted (mediatorctl stats) and logged again after this uid fits",
                metadata: [
                    "quota": "\(quota.rawValue)", "limit": "\(limit)", "uid": "\(credentials.uid)", "pid": "\(credentials.pid)",
                    "exe": "\(credentials.executable ?? "unknown")",
                ])
        }
        return MediatorError(
            .overloaded, "uid \(credentials.uid) reached its quota \(quota.rawValue) = \(limit)",
            data: ["quota": .string(quota.rawValue), "limit": .int(Int64(limit))])
    }
}
