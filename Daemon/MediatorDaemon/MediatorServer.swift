import Logging
import MediatorProtocol
import MediatorTransport
import NIOCore
import NIOPosix
import ServiceLifecycle

/// The daemon as a `Service`: binds (or adopts) the socket, accepts
/// connections, and on graceful shutdown stops accepting, lets calls in
/// flight finish within the grace period, answers the rest and returns.
///
/// All connections share one event loop, which also owns the ``Broker``, so
/// routing needs no locks (dbus-broker is single-threaded for the same reason).
public final class MediatorServer: Service, Sendable {
    public enum Listener: Sendable {
        /// Bind a new socket at this path (the file is removed on exit).
        case path(String)
        /// Adopt an already listening socket, e.g. from socket activation.
        case adopted(NIOBSDSocket.Handle, path: String?)
    }

    let configuration: DaemonConfiguration
    let listener: Listener
    let socketMode: UInt32
    let logger: Logger
    let group: MultiThreadedEventLoopGroup
    let onReady: @Sendable () async -> Void

    public init(
        configuration: DaemonConfiguration, listener: Listener, socketMode: UInt32 = 0o666, logger: Logger,
        onReady: @escaping @Sendable () async -> Void = {}
    ) {
        self.configuration = configuration
        self.listener = listener
        self.socketMode = socketMode
        self.logger = logger
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.onReady = onReady
    }

    public func run() async throws {
        let eventLoop = group.next()
        let broker = Broker(configuration: configuration, logger: logger)
        let host = BrokerHost(eventLoop: eventLoop, broker: broker, logger: logger)
        let configuration = self.configuration
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .childChannelOption(
                ChannelOptions.writeBufferWaterMark,
                value: .init(low: configuration.maxOutboundBytes / 2, high: configuration.maxOutboundBytes))

        let initializer: @Sendable (any Channel) -> EventLoopFuture<any Channel> = { channel in
            PeerCredentialsReader.read(channel).flatMapThrowing { credentials in
                try channel.pipeline.syncOperations.addHandler(
                    ByteToMessageHandler(LineFrameDecoder(maxFrameBytes: configuration.maxFrameBytes)))
                try channel.pipeline.syncOperations.addHandler(PeerHandler(host: host, credentials: credentials))
                return channel
            }
        }

        let server: NIOAsyncChannel<any Channel, Never>
        var boundPath: String?
        switch listener {
        case .path(let path):
            try SocketFile.prepare(path)
            server = try await bootstrap.bind(unixDomainSocketPath: path, childChannelInitializer: initializer)
            SocketFile.setMode(path, socketMode)
            boundPath = path
        case .adopted(let handle, _):
            server = try await bootstrap.bind(handle, childChannelInitializer: initializer)
        }
        logger.info("listening", metadata: ["socket": "\(listenerDescription)", "max_connections": "\(configuration.maxConnections)"])
        await onReady()

        let grace = TimeAmount.milliseconds(configuration.shutdownGraceMs)
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { inbound in
                    for try await child in inbound {
                        // One connection's end or failure never reaches the server.
                        group.addTask { try? await child.closeFuture.get() }
                    }
                }
            }
        } onGracefulShutdown: { [logger] in
            logger.info("stopping: no new connections; calls in flight may finish")
            eventLoop.execute {
                server.channel.close(promise: nil)
                _ = host.stop(grace: grace)
            }
        }
        if let boundPath { SocketFile.remove(boundPath) }
        logger.info("stopped", metadata: ["calls_routed": "\(broker.callsRouted)"])
        try await group.shutdownGracefully()
    }

    var listenerDescription: String {
        switch listener {
        case .path(let path): return path
        case .adopted(let handle, let path): return path ?? "fd \(handle)"
        }
    }
}
