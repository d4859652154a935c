import Logging
import MediatorClient
import MediatorConfiguration
import MediatorEmbeddedDaemon
import MediatorProtocol
import ServiceLifecycle

/// A Mediator daemon inside the test process: the broker of `mediatord`
/// itself (its routing, schema checks, policy and limits) served on a Unix
/// socket in a private temporary directory, so that a component's tests
/// call it through the real protocol without installing or starting
/// `mediatord`.
///
/// Get one from ``withTestDaemon(logger:_:)``, which starts it, waits until
/// it accepts connections and stops it when its body returns:
///
/// ```swift
/// import MediatorTesting
/// import Testing
///
/// @Test func greets() async throws {
///     try await withTestDaemon { daemon in
///         try await daemon.serving(Component(serving: Greeter())) {
///             try await daemon.withClient { client in
///                 let result = try await HelloClient(client).greet(GreetParams(name: "Ann"))
///                 #expect(result.greeting == "Hello, Ann!")
///             }
///         }
///     }
/// }
/// ```
///
/// Each daemon has its own socket and event loop, so tests that run in
/// parallel do not meet. It starts no components of its own (no manifests)
/// and applies the policy `mediatord` applies without policy files.
public struct MediatorTestDaemon: Sendable {
    /// The daemon's socket: give it to code under test that takes a path
    /// (``MediatorClient/connect(socketPath:name:maxFrameBytes:fds:tracer:logger:interceptors:)``,
    /// ``Component/run(socketPath:name:onRegistered:)``, or `MEDIATOR_SOCKET`
    /// for a child process).
    public let socketPath: String

    /// How long ``withTestDaemon(logger:_:)`` waits for the daemon to listen,
    /// and ``serving(_:name:_:)`` for a component to register: both are
    /// local and quick, so only a broken setup reaches it.
    public static let readinessTimeout: Duration = .seconds(10)

    /// The logger a test daemon uses unless given one: warnings and worse,
    /// through whatever `LoggingSystem` the test process bootstrapped.
    public static var defaultLogger: Logger {
        var logger = Logger(label: "mediator.test-daemon")
        logger.logLevel = .warning
        return logger
    }

    /// A client connected to this daemon (close it with
    /// ``MediatorClient/close()``, or use ``withClient(name:_:)``).
    public func connect(name: String? = nil) async throws(MediatorError) -> MediatorClient {
        try await MediatorClient.connect(socketPath: socketPath, name: name)
    }

    /// Runs `body` with a client connected to this daemon, and closes the
    /// client when `body` returns or throws.
    public func withClient<Result: Sendable>(
        name: String? = nil, _ body: (MediatorClient) async throws -> Result
    ) async throws -> Result {
        try await withMediatorClient(socketPath: socketPath, name: name, body)
    }

    /// Serves `component` on this daemon while `body` runs: returns once
    /// `body` has, after stopping the component (its task is cancelled, it
    /// closes its connection and the daemon drops its target).
    ///
    /// `body` starts only once the component is registered, so its calls
    /// reach it. The component's ``Component/onRegistered`` is called too.
    ///
    /// - Parameter name: the connection's name (the `caller.name` of the
    ///   component's own calls).
    /// - Throws: what the first registration throws, as
    ///   ``Component/run()`` does:
    ///   `bad_request` for specs the daemon refuses, `already_registered`
    ///   when another component serves the target exclusively; `timeout`
    ///   when it does not register within ``readinessTimeout``; else what
    ///   `body` throws.
    public func serving<Result: Sendable>(
        _ component: Component, name: String? = nil, _ body: () async throws -> Result
    ) async throws -> Result {
        let (events, registered) = AsyncStream.makeStream(of: Readiness.self)
        let socketPath = self.socketPath
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            var running = component
            running.socketPath = socketPath
            running.connectionName = name
            running.onRegistered = {
                registered.yield(.ready)
                await component.onRegistered?()
            }
            tasks.addTask { [running] in
                defer { registered.finish() }
                try await running.run()
            }
            do {
                try await Self.waitUntilReady(events, timedOut: registered, tasks: &tasks) {
                    "the component serving \(component.target) did not register within \(Self.readinessTimeout)"
                }
                let result = try await body()
                tasks.cancelAll()
                try await tasks.waitForAll()
                return result
            } catch {
                tasks.cancelAll()
                try? await tasks.waitForAll()
                throw error
            }
        }
    }

    enum Readiness: Sendable {
        case ready
        case timedOut
    }

    /// Waits for the first event of `events` (or for the task that yields
    /// it to end first: then its error is thrown), bounded by
    /// ``readinessTimeout``. The caller stops the task when this throws.
    static func waitUntilReady(
        _ events: AsyncStream<Readiness>, timedOut: AsyncStream<Readiness>.Continuation,
        tasks: inout ThrowingTaskGroup<Void, any Error>, what: () -> String
    ) async throws {
        let timer = Task {
            try await Task.sleep(for: readinessTimeout)
            timedOut.yield(.timedOut)
        }
        defer { timer.cancel() }
        var iterator = events.makeAsyncIterator()
        switch await iterator.next() {
        case .ready:
            return
        case .timedOut:
            throw MediatorError(.timeout, what())
        case nil:
            // The task ended before it was ready: its error says why.
            try await tasks.next()
            throw MediatorError(.internal, what())
        }
    }
}

/// Starts a ``MediatorTestDaemon`` in this process, runs `body` with it once
/// it accepts connections, then stops it (as `mediatord` stops on SIGTERM:
/// calls still in flight get their grace period) and removes its socket.
///
/// - Parameter logger: the daemon's logger; by default warnings and worse
///   (``MediatorTestDaemon/defaultLogger``).
/// - Throws: when the daemon cannot start (its socket cannot be made), or
///   does not listen within ``MediatorTestDaemon/readinessTimeout``
///   (`timeout`); else what `body` throws.
public func withTestDaemon<Result: Sendable>(
    logger: Logger = MediatorTestDaemon.defaultLogger,
    _ body: (MediatorTestDaemon) async throws -> Result
) async throws -> Result {
    let directory = try SocketDirectory.make()
    defer { directory.remove() }
    let daemon = MediatorTestDaemon(socketPath: directory.socketPath)
    let (events, ready) = AsyncStream.makeStream(of: MediatorTestDaemon.Readiness.self)
    // Owner only: no other user's process has business with a test's daemon.
    let server = try MediatorServer(
        configuration: DaemonConfiguration(), listener: .path(daemon.socketPath), socketMode: 0o600, logger: logger,
        onReady: { _ in ready.yield(.ready) })
    let services = ServiceGroup(configuration: ServiceGroupConfiguration(services: [server], logger: logger))
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask {
            defer { ready.finish() }
            try await services.run()
        }
        do {
            try await MediatorTestDaemon.waitUntilReady(events, timedOut: ready, tasks: &tasks) {
                "the test daemon did not listen on \(daemon.socketPath) within \(MediatorTestDaemon.readinessTimeout)"
            }
            let result = try await body(daemon)
            await services.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return result
        } catch {
            await services.triggerGracefulShutdown()
            try? await tasks.waitForAll()
            throw error
        }
    }
}
