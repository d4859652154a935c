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
/// or stuck scraper never touches the broker's loop, and each rendering
/// costs the broker one snapshot copied on its loop (``source``).
///
/// What a scraper can make it hold is bounded: at most
/// ``Settings/maxScrapes`` connections at a time (more wait to be
/// accepted), each closed after ``Settings/timeout``; overlapping scrapes share one
/// rendering (``ScrapeRenderings``), sent in slices of ``writeSliceBytes``
/// as the reader takes them, so a reader that does not read holds a slice,
/// not a copy of the text.
package struct MetricsEndpoint: Service {
    /// The broker's statistics now; nil once the broker is gone.
    package typealias Source = @Sendable () async -> StatisticsSnapshot?
    /// Whether the peer of a Unix socket connection may see the per-uid
    /// series (mediatord: the policy's `monitor` grant, by its credentials).
    package typealias UIDSeriesGrant = @Sendable (any Channel) async -> Bool

    package struct Settings: Sendable, Equatable {
        /// Connections at once; more wait in the listening socket's backlog.
        package var maxScrapes = 4
        /// How long one connection may take, request to response: every
        /// response closes its connection, so nothing idles, a reader that
        /// does not read is let go, and shutdown is bounded.
        package var timeout = TimeAmount.seconds(10)
        /// Whether a TCP scrape has the per-uid series (`mediator_uid_*`):
        /// anyone on the host can reach a loopback port, while `mediator/stats`
        /// shows them only to the `monitor` grant.
        package var uidSeriesOnTCP = false
        package init() {}
    }

    /// Mode of the Unix socket: the daemon's user and group may scrape.
    static let socketMode: mode_t = 0o660
    /// The body goes out this much at a time, each slice once the last is taken.
    static let writeSliceBytes = 64 << 10

    let address: MetricsListenAddress
    let settings: Settings
    let exposition: PrometheusExposition
    let source: Source
    let releaseMemory: @Sendable () -> Void
    let uidSeriesGrant: UIDSeriesGrant
    let logger: Logger
    let onListening: @Sendable (SocketAddress?) -> Void

    package init(
        address: MetricsListenAddress, exposition: PrometheusExposition, settings: Settings = Settings(), logger: Logger,
        uidSeriesGrant: @escaping UIDSeriesGrant = { _ in false }, releaseMemory: @escaping @Sendable () -> Void = {},
        onListening: @escaping @Sendable (SocketAddress?) -> Void = { _ in }, source: @escaping Source
    ) {
        self.address = address
        self.settings = settings
        self.exposition = exposition
        self.source = source
        self.releaseMemory = releaseMemory
        self.uidSeriesGrant = uidSeriesGrant
        self.logger = logger
        self.onListening = onListening
    }

    package func run() async throws {
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
    package struct BindFailure: Error, CustomStringConvertible {
        package var address: MetricsListenAddress
        package var reason: String
        package var description: String {
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
            // At most maxScrapes connections at a time: the next one is taken
            // from the listening socket only when one ends (the others wait in
            // the kernel's backlog, costing the daemon nothing).
            let renderings = ScrapeRenderings(
                exposition: exposition, maxAge: .nanoseconds(settings.timeout.nanoseconds), eventLoop: group.next(),
                releaseMemory: releaseMemory, source: source)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                var running = 0
                try await server.executeThenClose { connections in
                    for try await connection in connections {
                        if running >= settings.maxScrapes {
                            _ = try await tasks.next()
                            running -= 1
                        }
                        running += 1
                        tasks.addTask { await serve(connection, renderings) }
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
            // Bound under a temporary name, given its mode, then renamed into
            // place: nobody can connect to the path before its mode is right
            // (a peer that came between bind and chmod was refused).
            let staging = "\(path).\(getpid()).new"
            let server = try await bootstrap.bind(
                unixDomainSocketPath: staging, cleanupExistingSocketFile: true, childChannelInitializer: initializer)
            chmod(staging, Self.socketMode)
            guard rename(staging, path) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(staging)
                try? await server.channel.close()
                throw BindFailure(address: address, reason: reason.lowercased())
            }
            return server
        case .tcp(let host, let port):
            return try await bootstrap.bind(host: host, port: port, childChannelInitializer: initializer)
        }
    }

    /// One request, one response, then the connection is closed.
    private func serve(_ connection: Connection, _ renderings: ScrapeRenderings) async {
        let deadline = connection.channel.eventLoop.scheduleTask(in: settings.timeout) {
            connection.channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        let uidSeries: Bool
        switch address {
        case .tcp: uidSeries = settings.uidSeriesOnTCP
        case .unixSocket: uidSeries = await uidSeriesGrant(connection.channel)
        }
        do {
            try await connection.executeThenClose { requests, _ in
                var head: HTTPRequestHead?
                for try await part in requests {
                    switch part {
                    case .head(let requestHead): head = requestHead
                    case .body: continue  // nothing here takes a body
                    case .end:
                        guard let head else { return }
                        try await respond(to: head, on: connection.channel) { await renderings.rendering(uidSeries: uidSeries) }
                        return
                    }
                }
            }
        } catch {
            logger.debug("metrics connection ended", metadata: ["error": "\(error)"])
        }
    }

    private func respond(
        to head: HTTPRequestHead, on channel: any Channel, rendering: () async -> ScrapeRenderings.Rendering?
    ) async throws {
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard path == "/metrics" else {
            return try await send(.notFound, "not found: the metrics are at /metrics\n", to: channel)
        }
        guard head.method == .GET || head.method == .HEAD else {
            return try await send(.methodNotAllowed, "only GET and HEAD\n", extraHeaders: [("Allow", "GET, HEAD")], to: channel)
        }
        guard let rendering = await rendering() else {
            return try await send(.serviceUnavailable, "the broker is stopping\n", to: channel)
        }
        try await send(
            .ok, rendering.bytes, contentType: "text/plain; version=0.0.4; charset=utf-8", withBody: head.method != .HEAD,
            to: channel)
    }

    private func send(
        _ status: HTTPResponseStatus, _ text: String, extraHeaders: [(String, String)] = [],
        to channel: any Channel
    ) async throws {
        try await send(status, Array(text.utf8), contentType: "text/plain; charset=utf-8", extraHeaders: extraHeaders, to: channel)
    }

    /// The body in slices, each written once the one before reached the
    /// socket, so what a reader that does not read makes the endpoint hold
    /// stays one slice. (Written on the channel, not through the async
    /// writer: that one takes every write until the event loop turns the
    /// channel unwritable, by which time a whole text may be queued.)
    private func send(
        _ status: HTTPResponseStatus, _ body: [UInt8], contentType: String, extraHeaders: [(String, String)] = [],
        withBody: Bool = true, to channel: any Channel
    ) async throws {
        var headers = HTTPHeaders([
            ("Content-Type", contentType), ("Content-Length", String(body.count)), ("Connection", "close"),
        ])
        headers.add(contentsOf: extraHeaders)
        try await channel.writeAndFlush(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))).get()
        if withBody {
            var start = 0
            while start < body.count {
                let end = min(body.count, start + Self.writeSliceBytes)
                try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: body[start..<end])))).get()
                start = end
            }
        }
        try await channel.writeAndFlush(HTTPServerResponsePart.end(nil)).get()
    }
}
