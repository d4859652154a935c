#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MediatorProtocol
import Tracing

/// A connection to `mediatord`, for calls, events and (through
/// ``Component``) serving a target.
///
/// Every method may be called from any task at the same time; calls are
/// pipelined on the one connection and matched to their responses by id.
/// When the connection closes, every call in flight fails at once with
/// `disconnected`, and every stream and subscription ends.
///
/// Keep the client alive while you use it: when the last reference goes, the
/// connection is closed. Live ``stream(target:action:params:timeout:)`` and
/// ``subscribe(_:)`` streams keep their client alive until they end.
public final class MediatorClient: Sendable {
    let connection: Connection

    /// The daemon's number for this connection, from `hello`'s result.
    public let connectionID: Int?

    /// The executor of this client's connection: a task that prefers it
    /// runs on the thread that does the connection's I/O, so its calls are
    /// written and resumed without a thread hand-off (about half the
    /// latency of a call from the global executor). Everything it runs
    /// shares that thread: use it for code that awaits, not for code that
    /// blocks or computes for long.
    ///
    /// ```swift
    /// try await withTaskExecutorPreference(client.executor) {
    ///     for item in items { _ = try await client.call(target: "Notes", action: "add", params: item) }
    /// }
    /// ```
    @available(macOS 15.0, *)
    public var executor: any TaskExecutor { connection.executor }

    /// Which tracer makes the calls' spans (docs/tracing.md): read first
    /// at each call, for the path without interceptors or tracing.
    let tracing: CallTracing
    /// The interceptors given to `connect`, and the tracing as the innermost one.
    let chain: ClientInterceptorChain
    /// Whether `connect` was given interceptors: a flag read at each call
    /// rather than the array (no retain of its buffer on the direct path).
    let hasInterceptors: Bool

    init(connection: Connection, connectionID: Int?, tracer: (any Tracer)? = nil, interceptors: [any ClientInterceptor] = []) {
        self.connection = connection
        self.connectionID = connectionID
        self.tracing = CallTracing(explicitTracer: tracer)
        self.chain = ClientInterceptorChain(interceptors, tracer: tracer)
        self.hasInterceptors = !interceptors.isEmpty
    }

    deinit {
        connection.close()
    }

    /// Connects and says `hello`.
    ///
    /// - Parameters:
    ///   - socketPath: nil for the default: `MEDIATOR_SOCKET`, else the
    ///     system instance's socket.
    ///   - name: sent in `hello`; the daemon passes it to components as
    ///     `caller.name`.
    ///   - maxFrameBytes: the largest inbound frame (without LF) accepted.
    ///   - fds: says `"fds": true` in `hello`: the client sends and receives
    ///     file descriptors (``call(target:action:params:descriptors:timeout:)``),
    ///     up to ``maxDescriptorsPerMessage`` per message. Without it,
    ///     sending descriptors throws `fds_not_supported` and any that
    ///     arrive are closed and refused.
    ///   - tracer: makes a `.client` span around each call and injects its
    ///     context (`traceparent`); nil uses `InstrumentationSystem`'s, and
    ///     when nothing is bootstrapped no spans are made (docs/tracing.md).
    ///   - logger: where the connection logs (connecting, protocol errors,
    ///     a lost daemon); nil for the library's `mediator.client` logger.
    ///   - interceptors: run around each call, in this order, the first
    ///     outermost (<doc:InterceptingCalls>); the tracing is one more,
    ///     innermost, unless they include a ``TracingClientInterceptor``.
    /// - Throws: `unreachable` when the socket cannot be reached or the
    ///   daemon hangs up during `hello`; the daemon's error when it refuses
    ///   `hello` (`unsupported_protocol`).
    public static func connect(
        socketPath: String? = nil, name: String? = nil,
        maxFrameBytes: Int = ProtocolConstants.defaultMaxFrameBytes, fds: Bool = false, tracer: (any Tracer)? = nil,
        logger: Logger? = nil, interceptors: [any ClientInterceptor] = []
    ) async throws(MediatorError) -> MediatorClient {
        try await connect(
            socketPath: socketPath, name: name, maxFrameBytes: maxFrameBytes, fds: fds, hooks: nil, tracer: tracer,
            logger: logger ?? Self.logger, interceptors: interceptors)
    }

    static let logger = Logger(label: "mediator.client")

    static func resolvedSocketPath(_ explicit: String?) -> String {
        ProtocolConstants.socketPath(explicit: explicit, environment: ProcessInfo.processInfo.environment)
    }

    static func connect(
        socketPath: String?, name: String?, maxFrameBytes: Int, fds: Bool = false, hooks: InboundHooks?,
        tracer: (any Tracer)?, logger: Logger = MediatorClient.logger, interceptors: [any ClientInterceptor] = []
    ) async throws(MediatorError) -> MediatorClient {
        let path = resolvedSocketPath(socketPath)
        let connection = try await Connection.connect(
            socketPath: path, maxFrameBytes: max(1, maxFrameBytes), acceptsDescriptors: fds, hooks: hooks, logger: logger)
        var params: [String: JSONValue] = ["protocol": .int(ProtocolConstants.version)]
        if let name { params["name"] = .string(name) }
        if fds { params[HelloFileDescriptors.paramsMember] = .bool(true) }
        let result: JSONValue
        do {
            result = try await connection.call(
                ProtocolConstants.daemonTarget, "hello", params: .object(params), timeoutMs: nil)
        } catch {
            connection.close()
            if error.code == .disconnected {
                throw MediatorError(.unreachable, "cannot connect to \(path): the daemon closed the connection")
            }
            throw error
        }
        connection.setPeerMaxFrameBytes(result["max_frame"]?.intValue)
        if fds { connection.setPeerMaxDescriptors(HelloFileDescriptors.maxFds(result: result)) }
        let connectionID = result["connection"]?.intValue.flatMap { Int(exactly: $0) }
        logger.debug("connected", metadata: ["socket": "\(path)", "connection": "\(connectionID.map(String.init) ?? "?")"])
        return MediatorClient(connection: connection, connectionID: connectionID, tracer: tracer, interceptors: interceptors)
    }

    // MARK: - Calls

    /// Calls `action` of `target` and waits for its response.
    ///
    /// - Parameters:
    ///   - target: the target's name (`Notes`), or `mediator` for the daemon's own actions.
    ///   - action: the action's name (`add`).
    ///   - params: the request's `params`, a JSON object; checked by the
    ///     daemon against the action's params schema when it declares one.
    ///   - timeout: sent as `timeout_ms` (rounded up to whole
    ///     milliseconds); nil lets the daemon apply its default (30 s). The
    ///     daemon answers `timeout` itself; the client gives up on its own only
    ///     one second after that, in case the daemon stopped answering.
    /// - Throws: the error response; `cancelled` when the calling task is
    ///   cancelled (the daemon is told with `mediator/cancel`);
    ///   `disconnected` when the connection closes first.
    ///
    /// On the caller's executor (`nonisolated(nonsending)`), as the
    /// connection's call it makes: it only builds and queues the frame, and
    /// a hop to the generic executor and back read the task's executor
    /// preference under the task's lock twice per call.
    public nonisolated(nonsending) func call(
        target: String, action: String, params: JSONValue = .object([:]), timeout: Duration? = nil
    ) async throws(MediatorError) -> JSONValue {
        let mode = tracing.mode
        guard case .off = mode, !hasInterceptors else {
            let request = ClientRequest(kind: .call, target: target, action: action, params: .value(params), timeout: timeout)
            return try await intercepted(request, mode: mode).result
        }
        return try await connection.call(target, action, params: params, timeoutMs: timeout.map(Connection.milliseconds))
    }

    /// ``call(target:action:params:timeout:)`` with params as one JSON object's text,
    /// answered with the result's text (the Codable calls' path).
    func callEncoded(
        _ target: String, _ action: String, encodedParams: [UInt8], timeout: Duration?
    ) async throws(MediatorError) -> [UInt8] {
        let mode = tracing.mode
        guard case .off = mode, !hasInterceptors else {
            let request = ClientRequest(kind: .call, target: target, action: action, params: .encoded(encodedParams), timeout: timeout)
            return try await intercepted(request, mode: mode).resultText
        }
        return try await connection.call(
            target, action, encodedParams: encodedParams, timeoutMs: timeout.map(Connection.milliseconds))
    }

    /// ``call(target:action:params:timeout:)`` with params that `writeParams` appends
    /// as JSON text (the generated types' path: no JSONValue built for them).
    @usableFromInline
    func call(
        _ target: String, _ action: String, writingParams writeParams: (inout [UInt8]) -> Void, timeout: Duration?
    ) async throws(MediatorError) -> JSONValue {
        let mode = tracing.mode
        guard case .off = mode, !hasInterceptors else {
            // The interceptors may keep the request: the params are written out now.
            var text: [UInt8] = []
            writeParams(&text)
            try Connection.checkObjectParams(text[...])
            let request = ClientRequest(kind: .call, target: target, action: action, params: .encoded(text), timeout: timeout)
            return try await intercepted(request, mode: mode).result
        }
        return try await connection.call(
            target, action, writingParams: writeParams, timeoutMs: timeout.map(Connection.milliseconds))
    }

    /// ``stream(target:action:params:timeout:)`` with each response marked final or
    /// not, for a relay that must pass each on as it comes (the NATS bridge).
    @_spi(NATSBridge) public func markedStream(
        _ target: String, _ action: String, params: JSONValue, timeout: Duration? = nil, remoteCaller: JSONValue? = nil
    ) -> AsyncThrowingStream<StreamItem, any Error> {
        connection.markedStream(
            target, action, params: params, timeoutMs: timeout.map(Connection.milliseconds), keepAlive: self,
            remoteCaller: remoteCaller)
    }

    /// ``call(target:action:params:timeout:)`` on behalf of a caller on another host
    /// (`remote_caller`, docs/protocol.md): the daemon honours it from its
    /// own NATS bridge only.
    @_spi(NATSBridge) public func call(
        _ target: String, _ action: String, params: JSONValue, timeout: Duration?, remoteCaller: JSONValue
    ) async throws(MediatorError) -> JSONValue {
        try await connection.call(
            target, action, params: params, timeoutMs: timeout.map(Connection.milliseconds), remoteCaller: remoteCaller)
    }

    /// Sends a oneway request: no id, and no response, not even an error.
    /// Returns once the request is queued.
    ///
    /// - Parameters:
    ///   - target: the target's name.
    ///   - action: the action's name.
    ///   - params: the request's `params`, a JSON object.
    /// - Throws: `frame_too_large` (nothing sent) when the request is over the
    ///   daemon's frame limit; `disconnected` when the connection is closed.
    public func send(target: String, action: String, params: JSONValue = .object([:])) async throws(MediatorError) {
        let mode = tracing.mode
        guard case .off = mode, !hasInterceptors else {
            // With a tracer, the span covers only the queueing: no answer ever comes.
            _ = try await intercepted(ClientRequest(kind: .oneway, target: target, action: action, params: .value(params), timeout: nil), mode: mode)
            return
        }
        try connection.sendOneway(target, action, params: params)
    }

    /// Calls with `"more": true`: yields each `continues` result, then the
    /// final result, and ends. An error response ends it by throwing that
    /// `MediatorError`. Ending the iteration early (or cancelling the
    /// iterating task) sends `mediator/cancel`.
    ///
    /// The timeout applies to each response in turn, as in the daemon.
    ///
    /// - Parameters:
    ///   - target: the target's name.
    ///   - action: the action's name.
    ///   - params: the request's `params`, a JSON object.
    ///   - timeout: sent as `timeout_ms`; nil for the daemon's default.
    /// - Returns: the responses, each a ``StreamItem``; iterating throws the
    ///   errors ``call(target:action:params:timeout:)`` throws.
    public func stream(
        target: String, action: String, params: JSONValue = .object([:]), timeout: Duration? = nil
    ) -> MediatorStream<JSONValue> {
        let mode = tracing.mode
        guard case .off = mode, !hasInterceptors else {
            let request = ClientRequest(kind: .stream, target: target, action: action, params: .value(params), timeout: timeout)
            return interceptedStream(request, mode: mode)
        }
        return MediatorStream(connection.stream(
            target, action, params: params, timeoutMs: timeout.map(Connection.milliseconds), keepAlive: self))
    }

    // MARK: - The daemon's own actions

    /// `mediator/open`: routes a `SCHEME://TARGET/ACTION?k=v` URL and
    /// returns the routed call's result.
    ///
    /// - Parameters:
    ///   - url: the URL; its query items become the call's params, as strings.
    ///   - timeout: the routed call's timeout; nil for the daemon's default.
    /// - Throws: `bad_request` for a URL that does not parse; `forbidden`
    ///   for an action whose spec says `"url": false`; else the routed
    ///   call's errors, as ``call(target:action:params:timeout:)``.
    public func open(_ url: String, timeout: Duration? = nil) async throws(MediatorError) -> JSONValue {
        try await call(target: ProtocolConstants.daemonTarget, action: "open", params: ["url": .string(url)], timeout: timeout)
    }

    /// `mediator/list`: `{"targets": [...]}`.
    /// The daemon answers a long list in pages (`next` names the last
    /// target of a page that has more after it); this follows them and
    /// returns every target in one `{"targets": [...]}`, with the first
    /// page's `invalid_manifests` and `invalid_manifests_omitted` (manifest
    /// files the daemon skipped) when it has them.
    ///
    /// - Throws: as ``call(target:action:params:timeout:)`` (the access policy does
    ///   not gate `list`): `disconnected` when the connection closed.
    public func list() async throws(MediatorError) -> JSONValue {
        var targets: [JSONValue] = []
        var params: JSONValue = [:]
        var result: [String: JSONValue] = [:]
        // Bounded: each page moves past at least one target, by name.
        while true {
            let page = try await call(target: ProtocolConstants.daemonTarget, action: "list", params: params)
            targets += page["targets"]?.arrayValue ?? []
            if params["after"] == nil {
                for member in ["invalid_manifests", "invalid_manifests_omitted"] { result[member] = page[member] }
            }
            guard let next = page["next"]?.stringValue, next != params["after"]?.stringValue else { break }
            params = ["after": .string(next)]
        }
        result["targets"] = .array(targets)
        return .object(result)
    }

    /// `mediator/stats`: what the broker counted (docs/daemon.md,
    /// "Statistics"); needs the policy's monitor grant. The daemon pages
    /// the targets like `list`, a page sometimes ending inside a target
    /// (`next_action`); this follows the pages and returns one answer with
    /// all of them, a target cut across pages joined again.
    ///
    /// - Parameters:
    ///   - target: that target alone; nil for every target.
    ///   - slowCalls: false leaves the slow-call log out.
    /// - Throws: `forbidden` without the monitor grant; else as
    ///   ``call(target:action:params:timeout:)``.
    public func stats(target: String? = nil, slowCalls: Bool = true) async throws(MediatorError) -> JSONValue {
        var params: [String: JSONValue] = ["slow": .bool(slowCalls)]
        if let target { params["target"] = .string(target) }
        var first = try await call(target: ProtocolConstants.daemonTarget, action: "stats", params: .object(params))
        var targets = first["targets"]?.arrayValue ?? []
        var cursor = (first["next"]?.stringValue, first["next_action"]?.stringValue)
        // Bounded: each page moves past at least one target or action.
        while let after = cursor.0 {
            params["after"] = .string(after)
            params["after_action"] = cursor.1.map { .string($0) }
            let page = try await call(target: ProtocolConstants.daemonTarget, action: "stats", params: .object(params))
            var entries = page["targets"]?.arrayValue ?? []
            if cursor.1 != nil, let continued = entries.first, continued["target"]?.stringValue == after,
                case .object(var members)? = targets.popLast()
            {
                members["actions"] = .array((members["actions"]?.arrayValue ?? []) + (continued["actions"]?.arrayValue ?? []))
                targets.append(.object(members))
                entries.removeFirst()
            }
            targets += entries
            let next = (page["next"]?.stringValue, page["next_action"]?.stringValue)
            if next == cursor { break }
            cursor = next
        }
        if case .object(var members) = first {
            members["targets"] = .array(targets)
            members["next"] = nil
            members["next_action"] = nil
            first = .object(members)
        }
        return first
    }

    /// `mediator/describe`: the target, its description, ActionSpecs and instances.
    ///
    /// - Throws: `target_not_found` when no component serves `target` and no
    ///   manifest declares it; else as ``call(target:action:params:timeout:)``.
    public func describe(_ target: String) async throws(MediatorError) -> JSONValue {
        try await call(target: ProtocolConstants.daemonTarget, action: "describe", params: ["target": .string(target)])
    }

    /// `mediator/ping`: a round trip to the daemon, which answers `{}`.
    ///
    /// - Throws: as ``call(target:action:params:timeout:)``: `disconnected` when the
    ///   connection closed.
    public func ping() async throws(MediatorError) {
        _ = try await call(target: ProtocolConstants.daemonTarget, action: "ping")
    }

    /// `mediator/publish`; returns how many connections the event was
    /// delivered to.
    ///
    /// - Parameters:
    ///   - event: the event's name (`user.login`).
    ///   - data: the event's `data`; nil leaves it out.
    /// - Throws: `forbidden` for a name starting with `mediator.` (the
    ///   daemon's own events) or when the access policy denies it;
    ///   `bad_request` for a name the name rules refuse; else as
    ///   ``call(target:action:params:timeout:)``.
    @discardableResult
    public func publish(_ event: String, data: JSONValue? = nil) async throws(MediatorError) -> Int {
        var params: [String: JSONValue] = ["event": .string(event)]
        if let data { params["data"] = data }
        let result = try await call(target: ProtocolConstants.daemonTarget, action: "publish", params: .object(params))
        return result["delivered"]?.intValue.flatMap { Int(exactly: $0) } ?? 0
    }

    // MARK: - Closing

    /// Returns once the connection has ended: nil when this client closed
    /// it, else why it was lost (`disconnected`, saying how), as the calls
    /// in flight and the subscriptions were told.
    @discardableResult
    public func waitUntilClosed() async -> MediatorError? {
        await connection.waitUntilClosed()
        return connection.lossReason
    }

    /// Closes the connection (after sending what is queued) and waits until
    /// every call in flight has failed with `disconnected`. Idempotent.
    public func close() async {
        connection.close()
        await connection.waitUntilClosed()
    }
}
