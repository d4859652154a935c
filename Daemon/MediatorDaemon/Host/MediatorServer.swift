import CoreMetrics
import Logging
import MediatorConfiguration
import MediatorProtocol
import MediatorStatistics
import MediatorTransport
import MediatorEventLoop
import MediatorSocket
import NIOCore
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// The daemon as a `Service`: binds (or adopts) the socket, accepts
/// connections, and on graceful shutdown stops accepting, lets calls in
/// flight finish within the grace period, answers the rest and returns.
///
/// All connections share one sd-event loop on a thread of its own, which
/// also owns the ``Broker``, so routing needs no locks (dbus-broker is
/// single-threaded for the same reason). The sockets are read and written
/// with recvmsg/sendmsg, so descriptors pass (contract section 8).
/// The server knows nothing of systemd: its launcher hooks in through
/// `onReady`, `onStopping`, `heartbeat`, ``reload(_:)`` and ``statistics()``.
package final class MediatorServer: Service, Sendable {
    package enum Listener: Sendable {
        /// Bind a new socket at this path (the file is removed on exit).
        case path(String)
        /// Adopt an already listening socket, e.g. from socket activation;
        /// its file is never removed.
        case adopted(Int32, description: String)
        /// Carry on from the image that re-executed this one (issue 28):
        /// its listener, connections and state.
        case inherited(ReexecInheritance)

        var isInherited: Bool {
            if case .inherited = self { return true }
            return false
        }

        /// The path to tell peers: the one bound, or known from the hand-over.
        package var socketPath: String? {
            switch self {
            case .path(let path): return path
            case .adopted(let fd, _): return SocketFile.localPath(of: fd)
            case .inherited(let inheritance): return inheritance.advertisedPath
            }
        }
    }

    /// Something to call regularly from the broker's own event loop, so that
    /// a stuck loop stops it (the systemd watchdog).
    package struct Heartbeat: Sendable {
        package var interval: TimeAmount
        package var beat: @Sendable () -> Void
        package init(interval: TimeAmount, beat: @escaping @Sendable () -> Void) {
            self.interval = interval
            self.beat = beat
        }
    }

    package struct Statistics: Sendable, Equatable {
        package var connections: Int
        package var targets: Int
        package var callsRouted: Int
        package var callsInFlight: Int
    }

    let listener: Listener
    let socketMode: UInt32
    let logger: Logger
    let host: BrokerHost
    /// The loop's thread, running from `init` (the launcher loads the
    /// policy before `run`) until `run` returns.
    let loopThread: SDEventLoopThread
    let onReady: @Sendable (MediatorServer) async -> Void
    let onStopping: @Sendable () -> Void
    let heartbeat: Heartbeat?

    let manifests: [Manifest]
    let skippedManifests: [SkippedManifest]
    /// Connections a crashed predecessor kept in systemd's fd store.
    let storedConnections: [(name: String, fd: Int32)]
    let waitForBootComponents: Bool
    /// Tells a restart from a stop at SIGTERM; nil: every SIGTERM is a stop.
    let restartProbe: RestartProbe?

    /// Throws when sd-event cannot make a loop (out of memory or descriptors).
    package init(
        configuration: DaemonConfiguration, listener: Listener, socketMode: UInt32 = 0o666, logger: Logger,
        manifests: [Manifest] = [], skippedManifests: [SkippedManifest] = [], units: UnitControl? = nil,
        waitForBootComponents: Bool = false,
        heartbeat: Heartbeat? = nil, latencyMetrics: (any MetricsFactory)? = nil, reexec: ReexecSettings? = nil,
        connectionStore: ConnectionStore? = nil, storedConnections: [(name: String, fd: Int32)] = [],
        storedProcesses: [(name: String, fd: Int32)] = [], endsComponentsAtStop: Bool = false, restartProbe: RestartProbe? = nil,
        onReady: @escaping @Sendable (MediatorServer) async -> Void = { _ in },
        onStopping: @escaping @Sendable () -> Void = {}
    ) throws {
        self.manifests = manifests
        self.skippedManifests = skippedManifests
        self.waitForBootComponents = waitForBootComponents
        self.listener = listener
        self.socketMode = socketMode
        self.logger = logger
        let broker = Broker(configuration: configuration, logger: logger)
        if let latencyMetrics { broker.recordLatencies(to: latencyMetrics) }
        let host = BrokerHost(loop: try SDEventLoop(), broker: broker, logger: logger)
        self.host = host
        self.loopThread = try host.loop.start()
        self.heartbeat = heartbeat
        self.onReady = onReady
        host.units = units
        host.reexecSettings = reexec
        host.connectionStore = connectionStore
        host.endsComponentsAtStop = endsComponentsAtStop
        if !storedProcesses.isEmpty {
            let (processes, strays) = StoredProcess.group(storedProcesses)
            for (name, fd) in strays {
                logger.warning("dropping a descriptor of the fd store that is no component process's", metadata: ["name": "\(name)"])
                connectionStore?.remove(name)
                close(fd)
            }
            host.storedProcesses = processes
        }
        self.storedConnections = storedConnections
        self.restartProbe = restartProbe
        self.onStopping = onStopping
    }

    /// Applies new limits: at once for calls, timeouts and the connection
    /// count; frame and queue limits for connections accepted from now on.
    package func reload(_ configuration: DaemonConfiguration) async {
        let host = self.host
        try? await host.loop.submit { host.broker.configuration = configuration }
        logger.info("configuration reloaded", metadata: ["max_connections": "\(configuration.maxConnections)"])
    }

    /// Replaces the access policy (at start and on SIGHUP).
    package func loadPolicy(_ policy: Policy) async {
        let host = self.host
        try? await host.loop.submit { host.broker.loadPolicy(policy) }
    }

    /// Replaces the component manifests and the files skipped (SIGHUP).
    package func reloadManifests(_ manifests: [Manifest], skipped: [SkippedManifest] = []) async {
        let host = self.host
        try? await host.loop.submit { host.apply(host.broker.loadManifests(manifests, skipped: skipped, now: .now())) }
    }

    /// Adds the member `name` to `mediator/stats`'s answer (the first page
    /// of the whole daemon's), from `read` at each answer (nil: left out).
    /// For services of this process that are clients of the daemon, such as
    /// the NATS bridge: the broker knows them only by these figures. `read`
    /// runs on the broker's loop: it must return at once.
    package func addStatisticsSection(_ name: String, _ read: @escaping @Sendable () -> JSONValue?) async {
        let host = self.host
        try? await host.loop.submit { host.broker.statisticsSections.append((name, read)) }
    }

    /// Re-executes the daemon's binary in place, keeping every connection
    /// (SIGUSR2, or a reload that found a new binary); returns at once.
    package func reexec() {
        let host = self.host
        try? host.loop.execute { host.requestReexec(nil) }
    }

    /// Whether the binary the daemon was started from is not the one
    /// running any more (an upgrade replaced it); false when not known.
    package var binaryReplacedOnDisk: Bool { host.reexecSettings?.image.isReplacedOnDisk ?? false }

    package func statistics() async -> Statistics? {
        let host = self.host
        return try? await host.loop.submit {
            Statistics(
                connections: host.connectionCount, targets: host.broker.registry.targets.count,
                callsRouted: host.broker.callsRouted, callsInFlight: host.broker.inFlight.count)
        }
    }

    /// The broker's counters and figures of now, copied on its loop (the
    /// counters are copied on write, so routing resumes at once); nil once the loop is gone.
    package func statisticsSnapshot() async -> StatisticsSnapshot? {
        let host = self.host
        return try? await host.loop.submit { host.broker.statisticsSnapshot(now: .now()) }
    }

    /// Whether the peer of `channel`, a Unix socket connection accepted
    /// elsewhere (the metrics endpoint's), has the policy's `monitor` grant,
    /// by the credentials the kernel gives for it; false when they cannot be read.
    package func grantsMonitor(toPeerOf channel: any Channel) async -> Bool {
        guard let credentials = try? await PeerCredentialsReader.read(channel).get() else { return false }
        let host = self.host
        return (try? await host.loop.submit { host.broker.grantsMonitor(credentials) }) ?? false
    }

    package func run() async throws {
        let host = self.host
        let loop = host.loop
        // Components are told where to connect: the path bound, or the one the passed socket has.
        let advertised = listener.socketPath ?? ProtocolConstants.systemSocketPath
        let thread = loopThread
        // Everything a first call may need is in place before the socket
        // accepts: with socket activation that call is already waiting.
        let (manifests, skippedManifests) = (self.manifests, self.skippedManifests)
        try await loop.submit {
            host.supervisor = ProcessSupervisor(logger: host.logger, socketPath: advertised)
            host.advertisedPath = advertised
            host.apply(host.broker.loadManifests(manifests, skipped: skippedManifests, now: .now()))
        }
        var boundPath: String?
        if case .inherited(let inheritance) = listener {
            // A re-exec: the predecessor's components run already.
            boundPath = inheritance.boundPath
            do {
                let stored = storedConnections
                let resumption = try await loop.submit { () throws(ReexecError) in
                    let resumption = try host.resume(from: inheritance)
                    // Stored connections a restart's hand-over did not name (in the same turn: no id taken meanwhile).
                    if !stored.isEmpty { host.settleUnclaimedStoredConnections(stored, after: resumption) }
                    // A state that could not be read is as lost as after a crash: the processes may claim their components.
                    if case .cleanRestart = resumption, inheritance.origin == .fdStore { host.offerStoredProcessesForAdoption() }
                    host.endUnclaimedStoredProcesses()
                    return resumption
                }
                logger.notice(
                    inheritance.origin == .reexec ? "carrying on after a re-exec" : "carrying on after a restart (fd store)",
                    metadata: ["outcome": "\(resumption)", "pid": "\(getpid())"])
            } catch {
                _ = try? thread.stop()
                throw error
            }
        } else {
            try await bind(&boundPath)
            logger.info("listening", metadata: ["socket": "\(listenerDescription)"])
            // Components need the socket to connect to, so they start only now.
            try await loop.submit { host.apply(host.broker.startBootComponents(now: .now())) }
        }
        // After a re-exec the first image waited for them already (no boot completes again).
        if waitForBootComponents, !listener.isInherited { _ = await host.bootWaiters.wait() }
        if let heartbeat {
            // Beats from the broker's own loop, so a stuck loop stops them.
            let interval = Duration.nanoseconds(heartbeat.interval.nanoseconds)
            try await loop.submit { try host.startHeartbeat(every: interval, heartbeat.beat) }
        }
        await onReady(self)
        await serveUntilShutdown(boundPath: boundPath)
    }

    /// Binds (or adopts) the listening socket and starts serving it.
    private func bind(_ boundPath: inout String?) async throws {
        let host = self.host
        do {
            let listeningSocket: Int32
            switch listener {
            case .path(let path):
                try SocketFile.prepare(path)
                listeningSocket = try SocketFile.listen(path, mode: socketMode, backlog: Self.backlog)
                boundPath = path
            case .adopted(let handle, _):
                listeningSocket = handle
            case .inherited:
                return
            }
            let adopted = try UnixListener(adopting: OwnedDescriptor(taking: listeningSocket))
            let (bound, stored) = (boundPath, storedConnections)
            try await host.loop.submit {
                host.boundPath = bound
                try host.start(listener: adopted, listenerDescriptor: listeningSocket)
                // In the same turn of the loop: no peer accepted before them may take one of their ids.
                if !stored.isEmpty { host.adoptStoredConnections(stored) }
                // After a crash: its component processes run on, until they claim their components or the bound passes.
                host.offerStoredProcessesForAdoption()
                host.endUnclaimedStoredProcesses()
            }
        } catch {
            if let boundPath { SocketFile.remove(boundPath) }
            _ = try? loopThread.stop()
            throw error
        }
    }

    private func serveUntilShutdown(boundPath: String?) async {
        let host = self.host
        let loop = host.loop
        let thread = loopThread

        // Until SIGTERM (or the group's end): then no new connections, and
        // the calls in flight get the grace period.
        try? await gracefulShutdown()
        if await handedOverForRestart() {
            _ = try? thread.stop()
            return
        }
        logger.info("stopping: no new connections; calls in flight may finish")
        onStopping()
        let grace = Duration.milliseconds(host.broker.configuration.shutdownGraceMs)
        await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
            do {
                try loop.execute { host.stop(grace: grace) { stopped.resume() } }
            } catch {
                stopped.resume()
            }
        }
        _ = try? thread.stop()
        if let boundPath { SocketFile.remove(boundPath) }
        logger.info("stopped", metadata: ["calls_routed": "\(host.broker.callsRouted)"])
    }

    /// At SIGTERM under systemd with `--fd-store`: when the unit's job is a
    /// restart, everything goes to the next daemon through the fd store and
    /// nothing is closed (issue 28). False for a stop, or when the hand-over
    /// failed (then the stop goes on as a stop).
    private func handedOverForRestart() async -> Bool {
        guard let restartProbe else { return false }
        let asked = ContinuousClock.now
        let verdict = await restartProbe.check()
        let answered = ContinuousClock.now
        guard case .restart(let why) = verdict else {
            if case .stop(let why) = verdict { logger.info("SIGTERM is a stop, not a restart", metadata: ["reason": "\(why)"]) }
            return false
        }
        let host = self.host
        let outcome = await withCheckedContinuation { (handed: CheckedContinuation<BrokerHost.StoreHandOverOutcome, Never>) in
            do {
                try host.loop.execute { host.handOverThroughStore { handed.resume(returning: $0) } }
            } catch {
                handed.resume(returning: .notHandedOver("the loop is gone: \(error)"))
            }
        }
        switch outcome {
        case .handedOver(let connections, let calls):
            logger.notice("restarting: the next daemon carries on", metadata: [
                "job": "\(why)", "connections": "\(connections)", "calls_in_flight": "\(calls)",
                // Where a restart's time goes (docs/benchmark.md).
                "probe_ms": "\(Self.milliseconds(answered - asked))",
                "handover_ms": "\(Self.milliseconds(ContinuousClock.now - answered))",
            ])
            return true
        case .notHandedOver(let reason):
            logger.warning("restart without a hand-over: stopping as for a stop", metadata: ["reason": "\(reason)"])
            return false
        }
    }

    private static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenths = seconds * 10_000 + attoseconds / 100_000_000_000_000
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// Connections waiting to be accepted, at most.
    static let backlog: Int32 = 256

    var listenerDescription: String {
        switch listener {
        case .path(let path): return path
        case .adopted(_, let description): return description
        case .inherited(let inheritance): return inheritance.advertisedPath ?? "the socket handed over"
        }
    }
}
