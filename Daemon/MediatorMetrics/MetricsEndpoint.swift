import Logging
import MediatorStatistics
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// `GET /metrics` in the Prometheus text format, over HTTP/1 on a Unix
/// socket or a loopback port. It runs on an event loop of its own: a slow
/// or stuck scraper never touches the broker's loop, and each scrape costs
/// the broker one snapshot copied on its loop (``source``).
public struct MetricsEndpoint: Service {
    /// The broker's statistics now; nil once the broker is gone.
    public typealias Source = @Sendable () async -> StatisticsSnapshot?

    /// Mode of the Unix socket: the daemon's user and group may scrape.
    static let socketMode: mode_t = 0o660
    /// How long one connection may take, request to response: every response
    /// closes its connection, so nothing idles and shutdown is bounded.
    static let connectionDeadline = TimeAmount.seconds(10)

    let address: MetricsListenAddress
    let exposition: PrometheusExposition
    let source: Source
    let logger: Logger
    let onListening: @Sendable (SocketAddress?) -> Void

    public init(
        address: MetricsListenAddress, exposition: PrometheusExposition, logger: Logger,
        onListening: @escaping @Sendable (SocketAddress?) -> Void = { _ in }, source: @escaping Source
    ) {
        self.address = address
        self.exposition = exposition
        self.source = source
        self.logger = logger
        self.onListening = onListening
    }

    public func run() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await serve(on: group)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        try? await group.shutdownGracefully()
    }

    /// The endpoint cannot listen: one line with the address, the reason and what to do.
    public struct BindFailure: Error, CustomStringConvertible {
        public var address: MetricsListenAddress
        public var reason: String
        public var description: String {
            "cannot listen for metrics on \(address): \(reason); stop what uses it or pass another --metrics-listen"
        }
    }

    private func serve(on group: MultiThreadedEventLoopGroup) async throws {
        let server: NIOAsyncChannel<Connection, Never>
        do { server = try await bind(on: group) } catch let error as IOError {
            throw BindFailure(address: address, reason: String(cString: strerror(error.errnoCode)).lowercased())
        } catch {
            throw BindFailure(address: address, reason: "\(error)")
        }
        onListening(server.channel.localAddress)
        // The address bound, so that port 0 shows the port it got.
        let bound: String
        switch (address, server.channel.localAddress) {
        case (.tcp, let local?): bound = "\(local.ipAddress ?? "?"):\(local.port ?? 0)"
        default: bound = address.description
        }
        logger.info("metrics endpoint listening", metadata: ["address": "\(bound)", "path": "/metrics"])
        defer { if case .unixSocket(let path) = address { unlink(path) } }
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { tasks in
                try await server.executeThenClose { connections in
                    for try await connection in connections {
                        tasks.addTask { await serve(connection) }
                    }
                }
            }
        } onGracefulShutdown: {
            server.channel.close(promise: nil)
        }
    }

    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    private func bind(on group: MultiThreadedEventLoopGroup) async throws -> NIOAsyncChannel<Connection, Never> {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 16)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<Connection> = { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                return try Connection(wrappingChannelSynchronously: channel)
            }
        }
        switch address {
        case .unixSocket(let path):
            let server = try await bootstrap.bind(
                unixDomainSocketPath: path, cleanupExistingSocketFile: true, childChannelInitializer: initializer)
            chmod(path, Self.socketMode)
            return server
        case .tcp(let host, let port):
            return try await bootstrap.bind(host: host, port: port, childChannelInitializer: initializer)
        }
    }

    /// One request, one response, then the connection is closed.
    private func serve(_ connection: Connection) async {
        let deadline = connection.channel.eventLoop.scheduleTask(in: Self.connectionDeadline) {
            connection.channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        do {
            try await connection.executeThenClose { requests, responses in
                var head: HTTPRequestHead?
                for try await part in requests {
                    switch part {
                    case .head(let requestHead): head = requestHead
                    case .body: continue  // nothing here takes a body
                    case .end:
                        guard let head else { return }
                        try await respond(to: head, with: responses)
                        return
                    }
                }
            }
        } catch {
            logger.debug("metrics connection ended", metadata: ["error": "\(error)"])
        }
    }

    private func respond(to head: HTTPRequestHead, with responses: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>) async throws {
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard path == "/metrics" else {
            return try await send(.notFound, "not found: the metrics are at /metrics\n", to: responses)
        }
        guard head.method == .GET || head.method == .HEAD else {
            return try await send(.methodNotAllowed, "only GET and HEAD\n", extraHeaders: [("Allow", "GET, HEAD")], to: responses)
        }
        guard let snapshot = await source() else {
            return try await send(.serviceUnavailable, "the broker is stopping\n", to: responses)
        }
        let text = exposition.scrape(snapshot)
        try await send(
            .ok, text, contentType: "text/plain; version=0.0.4; charset=utf-8", withBody: head.method != .HEAD,
            to: responses)
    }

    private func send(
        _ status: HTTPResponseStatus, _ text: String, extraHeaders: [(String, String)] = [],
        to responses: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        try await send(status, Array(text.utf8), contentType: "text/plain; charset=utf-8", extraHeaders: extraHeaders, to: responses)
    }

    private func send(
        _ status: HTTPResponseStatus, _ body: [UInt8], contentType: String, extraHeaders: [(String, String)] = [],
        withBody: Bool = true, to responses: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        var headers = HTTPHeaders([
            ("Content-Type", contentType), ("Content-Length", String(body.count)), ("Connection", "close"),
        ])
        headers.add(contentsOf: extraHeaders)
        try await responses.write(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)))
        if withBody { try await responses.write(.body(.byteBuffer(ByteBuffer(bytes: body)))) }
        try await responses.write(.end(nil))
    }
}
