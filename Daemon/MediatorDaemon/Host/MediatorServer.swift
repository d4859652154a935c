import CoreMetrics
import Logging
import MediatorConfiguration
import MediatorProtocol
import MediatorStatistics
import MediatorTransport
import NIOCore
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// The daemon as a `Service`: binds (or adopts) the socket, accepts
/// connections, and on graceful shutdown stops accepting, lets calls in
/// flight finish within the grace period, answers the rest and returns.
///
/// All connections share one event loop, which also owns the ``Broker``, so
/// routing needs no locks (dbus-broker is single-threaded for the same reason).
/// The server knows nothing of systemd: its launcher hooks in through
/// `onReady`, `onStopping`, `heartbeat`, ``reload(_:)`` and ``statistics()``.
package final class MediatorServer: Service, Sendable {
    package enum Listener: Sendable {
        /// Bind a new socket at this path (the file is removed on exit).
        case path(String)
        /// Adopt an already listening socket, e.g. from socket activation;
        /// its file is never removed.
        case adopted(NIOBSDSocket.Handle, description: String)
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
    let group: MultiThreadedEventLoopGroup
    let host: BrokerHost
    let onReady: @Sendable (MediatorServer) async -> Void
    let onStopping: @Sendable () -> Void
    let heartbeat: Heartbeat?

    let manifests: [Manifest]
    let skippedManifests: [SkippedManifest]
    let waitForBootComponents: Bool

    package init(
        configuration: DaemonConfiguration, listener: Listener, socketMode: UInt32 = 0o666, logger: Logger,
        manifests: [Manifest] = [], skippedManifests: [SkippedManifest] = [], units: UnitControl? = nil,
        waitForBootComponents: Bool = false,
        heartbeat: Heartbeat? = nil, latencyMetrics: (any MetricsFactory)? = nil, onReady: @escaping @Sendable (MediatorServer) async -> Void = { _ in },
        onStopping: @escaping @Sendable () -> Void = {}
    ) {
        self.manifests = manifests
        self.skippedManifests = skippedManifests
        self.waitForBootComponents = waitForBootComponents
        self.listener = listener
        self.socketMode = socketMode
        self.logger = logger
        let tickEnd = LoopTickEnd()
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1, metricsDelegate: tickEnd)
        let broker = Broker(configuration: configuration, logger: logger)
        if let latencyMetrics { broker.recordLatencies(to: latencyMetrics) }
        let host = BrokerHost(eventLoop: group.next(), broker: broker, logger: logger)
        self.host = host
        host.eventLoop.execute { tickEnd.host = host }
        self.heartbeat = heartbeat
        self.onReady = onReady
        host.units = units
        self.onStopping = onStopping
    }

    /// Applies new limits: at once for calls, timeouts and the connection
    /// count; frame and queue limits for connections accepted from now on.
    package func reload(_ configuration: DaemonConfiguration) async {
        let host = self.host
        try? await host.eventLoop.submit { host.broker.configuration = configuration }.get()
        logger.info("configuration reloaded", metadata: ["max_connections": "\(configuration.maxConnections)"])
    }

    /// Replaces the access policy (at start and on SIGHUP).
    package func loadPolicy(_ policy: Policy) async {
        let host = self.host
        try? await host.eventLoop.submit { host.broker.loadPolicy(policy) }.get()
    }

    /// Replaces the component manifests and the files skipped (SIGHUP).
    package func reloadManifests(_ manifests: [Manifest], skipped: [SkippedManifest] = []) async {
        let host = self.host
        try? await host.eventLoop.submit {
            host.apply(host.broker.loadManifests(manifests, skipped: skipped, now: .now()))
            host.flush()
        }.get()
    }

    /// Adds the member `name` to `mediator/stats`'s answer (the first page
    /// of the whole daemon's), from `read` at each answer (nil: left out).
    /// For services of this process that are clients of the daemon, such as
    /// the NATS bridge: the broker knows them only by these figures. `read`
    /// runs on the broker's loop: it must return at once.
    package func addStatisticsSection(_ name: String, _ read: @escaping @Sendable () -> JSONValue?) async {
        let host = self.host
        try? await host.eventLoop.submit { host.broker.statisticsSections.append((name, read)) }.get()
    }

    package func statistics() async -> Statistics? {
        let host = self.host
        return try? await host.eventLoop.submit {
            Statistics(
                connections: host.connectionCount, targets: host.broker.registry.targets.count,
                callsRouted: host.broker.callsRouted, callsInFlight: host.broker.inFlight.count)
        }.get()
    }

    /// The broker's counters and figures of now, copied on its loop (the
    /// counters are copied on write, so routing resumes at once); nil once the loop is gone.
    package func statisticsSnapshot() async -> StatisticsSnapshot? {
        let host = self.host
        return try? await host.eventLoop.submit { host.broker.statisticsSnapshot(now: .now()) }.get()
    }

    /// Whether the peer of `channel`, a Unix socket connection accepted
    /// elsewhere (the metrics endpoint's), has the policy's `monitor` grant,
    /// by the credentials the kernel gives for it; false when they cannot be read.
    package func grantsMonitor(toPeerOf channel: any Channel) async -> Bool {
        guard let credentials = try? await PeerCredentialsReader.read(channel).get() else { return false }
        let host = self.host
        return (try? await host.eventLoop.submit { host.broker.grantsMonitor(credentials) }.get()) ?? false
    }

    package func run() async throws {
        let host = self.host
        let eventLoop = host.eventLoop
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: Self.backlog)

        let initializer: @Sendable (any Channel) -> EventLoopFuture<any Channel> = { channel in
            PeerCredentialsReader.read(channel).flatMapThrowing { credentials in
                // Read on the broker's loop (children share it): a reload applies to new connections.
                let configuration = host.broker.configuration
                try channel.syncOptions?.setOption(
                    ChannelOptions.writeBufferWaterMark,
                    value: .init(low: configuration.maxOutboundBytes / 2, high: configuration.maxOutboundBytes))
                try channel.pipeline.syncOperations.addHandler(
                    PeerHandler(host: host, credentials: credentials, maxFrameBytes: configuration.maxFrameBytes))
                return channel
            }
        }

        // Everything a first call may need is in place before the socket
        // accepts: with socket activation that call is already waiting.
        // Components are told where to connect: the path bound, or the one the passed socket has.
        let advertised: String
        switch listener {
        case .path(let path): advertised = path
        case .adopted(let handle, _): advertised = SocketFile.localPath(of: handle) ?? ProtocolConstants.systemSocketPath
        }
        do {
            let wakePipe = try await LoopWakePipe.open(on: eventLoop) { host.wokenUp() }.get()
            try await eventLoop.submit { host.wakePipe = wakePipe }.get()
        } catch {
            logger.warning("no wake-up pipe; dispatch yields with a timer", metadata: ["error": "\(error)"])
        }
        let (manifests, skippedManifests) = (self.manifests, self.skippedManifests)
        try await eventLoop.submit {
            host.supervisor = ProcessSupervisor(logger: host.logger, socketPath: advertised)
            host.apply(host.broker.loadManifests(manifests, skipped: skippedManifests, now: .now()))
        }.get()

        // The listening socket is ours in both cases (made here, or passed
        // in), so that AcceptGuard can accept on it to refuse peers when the
        // daemon is out of file descriptors.
        let listeningSocket: Int32
        var boundPath: String?
        switch listener {
        case .path(let path):
            try SocketFile.prepare(path)
            listeningSocket = try SocketFile.listen(path, mode: socketMode, backlog: Self.backlog)
            boundPath = path
        case .adopted(let handle, _):
            listeningSocket = handle
        }
        let logger = self.logger
        let madeHere = boundPath != nil
        let guarded = bootstrap.serverChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                // NIO listens again on an adopted socket, with its own default
                // backlog; ours is restored for the socket made here.
                if madeHere { _ = Glibc.listen(listeningSocket, Self.backlog) }
                try channel.pipeline.syncOperations.addHandler(
                    AcceptGuard(listener: listeningSocket, logger: logger) { host.connectionCount },
                    position: .first)
            }
        }
        let server: NIOAsyncChannel<any Channel, Never>
        do {
            server = try await guarded.bind(listeningSocket, childChannelInitializer: initializer)
        } catch {
            if let boundPath { SocketFile.remove(boundPath) }
            throw error
        }
        logger.info("listening", metadata: ["socket": "\(listenerDescription)"])
        // Components need the socket to connect to, so they start only now.
        try await eventLoop.submit {
            host.apply(host.broker.startBootComponents(now: .now()))
            host.flush()
        }.get()
        if waitForBootComponents { try await eventLoop.flatSubmit { host.bootComplete() }.get() }
        let beating = heartbeat.map { heartbeat in
            eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: heartbeat.interval) { _ in heartbeat.beat() }
        }
        await onReady(self)

        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { inbound in
                    for try await child in inbound {
                        // One connection's end or failure never reaches the server.
                        group.addTask { try? await child.closeFuture.get() }
                    }
                }
            }
        } onGracefulShutdown: { [logger, onStopping] in
            logger.info("stopping: no new connections; calls in flight may finish")
            onStopping()
            eventLoop.execute {
                server.channel.close(promise: nil)
                _ = host.stop(grace: .milliseconds(host.broker.configuration.shutdownGraceMs))
            }
        }
        beating?.cancel()
        try? await eventLoop.submit {
            host.wakePipe?.close()
            host.wakePipe = nil
        }.get()
        if let boundPath { SocketFile.remove(boundPath) }
        logger.info("stopped", metadata: ["calls_routed": "\(host.broker.callsRouted)"])
        try await group.shutdownGracefully()
    }

    /// Connections waiting to be accepted, at most.
    static let backlog: Int32 = 256

    var listenerDescription: String {
        switch listener {
        case .path(let path): return path
        case .adopted(_, let description): return description
        }
    }
}
