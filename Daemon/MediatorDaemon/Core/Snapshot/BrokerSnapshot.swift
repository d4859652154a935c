import MediatorConfiguration
import MediatorStatistics

/// The broker's state at one moment, by connection id, for a successor
/// process to carry on from (issue 28): what `Broker.snapshot(now:)` takes
/// and `Broker.restore(_:now:)` rebuilds. Pure data, without I/O: the host
/// hands the connections' descriptors over beside it, under the same ids.
///
/// Times are relative, never absolute: each process has its own monotonic
/// clock, so a call keeps the time it had left, not its deadline.
///
/// Managed components are captured (``activation``), with the calls held
/// for them and the `start`s waiting; their processes' pipes travel in the
/// host's part of the hand-over. Not captured (counted in ``leftOut``):
/// held calls with descriptors or from the NATS bridge, and the
/// re-registration hold's: a hand-over waits for them to go out. The policy
/// and the configuration are not captured: the successor reads them from
/// its files, as at any start.
struct BrokerSnapshot: Equatable, Sendable {
    /// The format's name in the encoding's `kind`; anything else is not a snapshot.
    static let kind = "mediatord-broker-snapshot"
    /// The format written; a reader refuses any other but those of
    /// ``readableVersions``. Raised whenever a member is added, removed or
    /// changes meaning (docs/daemon.md).
    /// 2: managed components (``activation``) added, `left_out` counts held calls only.
    /// 3: held calls (each component's `held`) and `start_waiters` in ``activation``.
    static let currentVersion: Int64 = 3
    /// The versions a reader accepts: its own, and 2, read as holding no
    /// held call (a version-2 writer waited for them to go out), so that
    /// an upgrade from the package before hands over as a restart does.
    static let readableVersions: ClosedRange<Int64> = 2...currentVersion
    /// The largest encoding a reader accepts: far above what the daemon's
    /// own limits let its state reach (4,096 connections, their calls and
    /// registrations take tens of MiB), and small enough that a corrupt
    /// or hostile file cannot make the successor allocate without bound.
    static let maxEncodedBytes = 256 * 1024 * 1024

    /// What the snapshot leaves out, so the successor can tell whom it owes an answer.
    struct LeftOut: Equatable, Sendable {
        /// Held calls the snapshot could not carry (Broker.uncarriedHeldCalls).
        var heldCalls = 0
    }

    /// Time since the daemon started (the uptime of `stats` and monitor records).
    var uptimeNanoseconds: Int64
    var peers: [PeerSnapshot]
    /// Registered targets, sorted by name.
    var targets: [TargetSnapshot]
    var nextInstance: Int
    /// Calls forwarded and not answered, oldest first.
    var calls: [CallSnapshot]
    var nextCallID: Int64
    var monitors: [ConnectionID: Monitors.Filter]
    /// Uids past their queued-bytes quota, with what it cost them so far.
    var queueEpisodes: [UInt32: QuotaLedger.QueueEpisode]
    var statistics: StatisticsSummary
    /// Managed components: their state, processes and deadlines.
    var activation: ActivationSnapshot
    var leftOut: LeftOut
}
