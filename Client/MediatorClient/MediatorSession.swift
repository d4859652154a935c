import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import Tracing

/// A client that stays connected: when the daemon goes away (a restart, an
/// upgrade), it connects again with backoff, as a ``Component`` does, and
/// subscribes its subscriptions again by itself.
///
/// Run it (``run()``, or as a ServiceLifecycle `Service` in a
/// `ServiceGroup`) for as long as it is used; calls wait for a connection.
///
/// ```swift
/// let session = MediatorSession(name: "dashboard")
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask { try await session.run() }
///     for try await event in session.events(["user.*"]) { print(event.name) }
/// }
/// ```
///
/// What a reconnect does to each kind of work:
/// - a call made while there is no connection waits for one, up to its
///   timeout (30 s when it gives none), then fails with `unreachable`;
/// - a call in flight when the connection is lost fails with
///   `disconnected` and `delivered` unknown: it may have run, so it is
///   never sent again by the session;
/// - a subscription (``events(_:)``) goes on across reconnects; the events
///   published while there was no connection are not seen; after
///   `mediator.reregister` (the daemon lost its state, not the connection)
///   it is subscribed again on the same connection;
/// - ``states`` says when the connection came and went, and why.
public final class MediatorSession: Service, Sendable {
    /// Where the session's connection is.
    public enum ConnectionState: Sendable, Equatable {
        /// Connecting, or waiting to connect again.
        case connecting
        /// Connected; the daemon's number for the connection.
        case connected(connectionID: Int?)
        /// The connection was lost, or could not be made: why.
        case disconnected(MediatorError)
    }

    private struct Subscription: Sendable {
        var patterns: [String]
        var continuation: AsyncThrowingStream<MediatorEvent, any Error>.Continuation
        /// Its relay from the current connection, if any.
        var relay: Task<Void, Never>?
    }

    private struct State: Sendable {
        var client: MediatorClient?
        var connectionWaiters: [Int: CheckedContinuation<MediatorClient?, Never>] = [:]
        var subscriptions: [Int: Subscription] = [:]
        var stateWatchers: [Int: AsyncStream<ConnectionState>.Continuation] = [:]
        var last: ConnectionState = .connecting
        var nextNumber = 0
        var ended = false
    }

    private let socketPath: String?
    private let name: String?
    /// Each connection says `"fds": true` (MediatorSession+Descriptors.swift).
    private let fds: Bool
    private let tracer: (any Tracer)?
    private let logger: Logger
    private let interceptors: [any ClientInterceptor]
    private let state = NIOLockedValueBox(State())

    static let initialBackoff: Duration = .milliseconds(50)
    static let maxBackoff: Duration = .seconds(2)
    /// How long a call waits for a connection when it gives no timeout.
    static let defaultWait: Duration = .seconds(30)

    /// - Parameters: those of ``MediatorClient/connect(socketPath:name:maxFrameBytes:fds:tracer:logger:interceptors:)``;
    ///   each connection's client runs the interceptors.
    public init(
        socketPath: String? = nil, name: String? = nil, fds: Bool = false, tracer: (any Tracer)? = nil, logger: Logger? = nil,
        interceptors: [any ClientInterceptor] = []
    ) {
        self.socketPath = socketPath
        self.name = name
        self.fds = fds
        self.tracer = tracer
        self.logger = logger ?? MediatorClient.logger
        self.interceptors = interceptors
    }

    // MARK: - Running

    /// Connects, and connects again whenever the connection is lost, with
    /// backoff (50 ms, doubling up to 2 s; every 50 ms for 10 s first after
    /// `mediator.restarting`), until the task is cancelled or
    /// a graceful shutdown begins; then closes the connection, ends the
    /// subscriptions and ``states`` normally, and returns.
    public func run() async {
        var backoff = ReconnectBackoff(initial: Self.initialBackoff, maximum: Self.maxBackoff)
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            publish(.connecting)
            let client: MediatorClient
            do {
                client = try await MediatorClient.connect(
                    socketPath: socketPath, name: name, fds: fds, tracer: tracer, logger: logger, interceptors: interceptors)
            } catch {
                publish(.disconnected(error))
                let delay = backoff.next()
                logger.debug("cannot connect; retrying in \(delay)", metadata: ["error": "\(error)"])
                _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: delay) }
                continue
            }
            backoff.reset()
            attach(client)
            let reason = await withGracefulShutdownHandler {
                await withTaskCancellationHandler {
                    await client.waitUntilClosed()
                } onCancel: {
                    client.connection.close()
                }
            } onGracefulShutdown: {
                client.connection.close()
            }
            detach()
            guard let reason else { break }  // closed by the session itself: it is ending
            if client.connection.daemonRestarting.load(ordering: .relaxed) { backoff.restarting() }
            publish(.disconnected(reason))
            logger.info("connection to the daemon lost; connecting again", metadata: ["reason": "\(reason.message)"])
        }
        end()
    }

    /// The session's connection states as they change, starting with the
    /// current one; ends when ``run()`` returns.
    public var states: AsyncStream<ConnectionState> {
        let (stream, continuation) = AsyncStream.makeStream(of: ConnectionState.self)
        let number = state.withLockedValue { locked -> Int? in
            guard !locked.ended else { return nil }
            locked.nextNumber += 1
            locked.stateWatchers[locked.nextNumber] = continuation
            continuation.yield(locked.last)
            return locked.nextNumber
        }
        guard let number else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [state] _ in
            _ = state.withLockedValue { $0.stateWatchers.removeValue(forKey: number) }
        }
        return stream
    }

    // MARK: - Calls

    /// ``MediatorClient/call(target:action:params:timeout:)`` on the current
    /// connection, waiting for one (up to `timeout`) when there is none.
    ///
    /// - Throws: `unreachable` when no connection came in time;
    ///   `disconnected` (with `delivered` unknown) when the connection was
    ///   lost with the call in flight; else as the call.
    public func call(
        target: String, action: String, params: JSONValue = .object([:]), timeout: Duration? = nil
    ) async throws(MediatorError) -> JSONValue {
        let client = try await connectedClient(within: timeout ?? Self.defaultWait)
        return try await client.call(target: target, action: action, params: params, timeout: timeout)
    }

    /// The current connection's client, waiting for one up to `bound`.
    func connectedClient(within bound: Duration) async throws(MediatorError) -> MediatorClient {
        if let client = state.withLockedValue({ $0.client }) { return client }
        let number = state.withLockedValue { locked -> Int in
            locked.nextNumber += 1
            return locked.nextNumber
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: bound)
            resumeWaiter(number, with: nil)
        }
        defer { timer.cancel() }
        let client = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<MediatorClient?, Never>) in
                let ready = state.withLockedValue { locked -> (Bool, MediatorClient?) in
                    if locked.ended || Task.isCancelled { return (true, nil) }
                    if let client = locked.client { return (true, client) }
                    locked.connectionWaiters[number] = continuation
                    return (false, nil)
                }
                if ready.0 { continuation.resume(returning: ready.1) }
            }
        } onCancel: {
            resumeWaiter(number, with: nil)
        }
        guard let client else {
            if Task.isCancelled { throw MediatorError(.cancelled, "the calling task was cancelled") }
            throw MediatorError(.unreachable, "no connection to the daemon within \(bound)")
        }
        return client
    }

    private func resumeWaiter(_ number: Int, with client: MediatorClient?) {
        state.withLockedValue { $0.connectionWaiters.removeValue(forKey: number) }?.resume(returning: client)
    }

    // MARK: - Events

    /// Events matching `patterns`, across reconnects: the session
    /// subscribes again on each new connection. It ends normally when the
    /// session ends; dropping it unsubscribes. Events published while there
    /// was no connection are not seen.
    public func events(_ patterns: [String]) -> MediatorStream<MediatorEvent> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: MediatorEvent.self)
        let (number, client) = state.withLockedValue { locked -> (Int?, MediatorClient?) in
            guard !locked.ended else { return (nil, nil) }
            locked.nextNumber += 1
            locked.subscriptions[locked.nextNumber] = Subscription(patterns: patterns, continuation: continuation)
            return (locked.nextNumber, locked.client)
        }
        guard let number else {
            continuation.finish()
            return MediatorStream(stream)
        }
        continuation.onTermination = { [state] _ in
            state.withLockedValue { $0.subscriptions.removeValue(forKey: number) }?.relay?.cancel()
        }
        if let client { startRelay(number, on: client) }
        return MediatorStream(stream)
    }

    /// Passes one connection's events of a subscription on to its stream.
    /// A refusal (a pattern the policy denies) ends the stream with it; a
    /// lost connection does not: the next one subscribes again.
    private func startRelay(_ number: Int, on client: MediatorClient) {
        let relay = Task { [self] in
            guard let subscription = state.withLockedValue({ $0.subscriptions[number] }) else { return }
            do throws(MediatorError) {
                for try await event in try await client.events(subscription.patterns) {
                    subscription.continuation.yield(event)
                }
            } catch {
                guard error.code != .disconnected, !Task.isCancelled else { return }
                subscription.continuation.finish(throwing: error)
            }
        }
        state.withLockedValue { $0.subscriptions[number]?.relay = relay }
    }

    // MARK: - Bookkeeping

    private func attach(_ client: MediatorClient) {
        let (waiters, subscriptions) = state.withLockedValue { locked in
            locked.client = client
            defer { locked.connectionWaiters = [:] }
            return (Array(locked.connectionWaiters.values), Array(locked.subscriptions.keys))
        }
        publish(.connected(connectionID: client.connectionID))
        for waiter in waiters { waiter.resume(returning: client) }
        for number in subscriptions { startRelay(number, on: client) }
    }

    private func detach() {
        let relays = state.withLockedValue { locked in
            locked.client = nil
            return locked.subscriptions.values.compactMap(\.relay)
        }
        for relay in relays { relay.cancel() }
    }

    private func publish(_ new: ConnectionState) {
        let watchers = state.withLockedValue { locked in
            locked.last = new
            return Array(locked.stateWatchers.values)
        }
        for watcher in watchers { watcher.yield(new) }
    }

    private func end() {
        let (client, waiters, subscriptions, watchers) = state.withLockedValue { locked in
            locked.ended = true
            defer {
                locked.client = nil
                locked.connectionWaiters = [:]
                locked.subscriptions = [:]
                locked.stateWatchers = [:]
            }
            return (
                locked.client, Array(locked.connectionWaiters.values), Array(locked.subscriptions.values),
                Array(locked.stateWatchers.values)
            )
        }
        client?.connection.close()
        for waiter in waiters { waiter.resume(returning: nil) }
        for subscription in subscriptions {
            subscription.relay?.cancel()
            subscription.continuation.finish()
        }
        for watcher in watchers { watcher.finish() }
    }
}
