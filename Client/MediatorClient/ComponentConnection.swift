import Logging
import MediatorProtocol
import NIOConcurrencyHelpers

/// One daemon connection that serves several components, registered and
/// unregistered while it runs (PROTOCOL.md section 6: one connection may
/// register several targets); each call goes to the component of its
/// target. The NATS bridge serves all its stand-ins over one, so the
/// daemon connections it takes do not grow with what other hosts announce.
///
/// Unlike ``Component/run()`` it registers
/// nothing by itself: a registration ends with the connection, and
/// `onConnected` (called after each connect, with nothing registered) is
/// where the owner registers its components again.
@_spi(NATSBridge) public final class ComponentConnection: Sendable {
    private struct State: Sendable {
        var client: MediatorClient?
        /// The components registered on the current connection, by target.
        var components: [String: Component] = [:]
    }

    private let socketPath: String?
    private let name: String?
    /// Says `"fds": true` in `hello` (contract section 8): the components
    /// registered on it receive descriptors (``CallContext/descriptors``)
    /// and may answer with some, as with ``Component/acceptsDescriptors``,
    /// which this connection's components share.
    private let acceptsDescriptors: Bool
    private let state = NIOLockedValueBox(State())

    public init(socketPath: String?, name: String?, acceptsDescriptors: Bool = false) {
        self.acceptsDescriptors = acceptsDescriptors
        self.socketPath = socketPath
        self.name = name
    }

    /// The targets registered now.
    public var registeredTargets: Set<String> { state.withLockedValue { Set($0.components.keys) } }

    public var isConnected: Bool { state.withLockedValue { $0.client != nil } }

    /// Connects, calls `onConnected`, serves calls until the connection
    /// drops, and connects again with exponential backoff (50 ms, doubling
    /// up to 2 s; every 50 ms for 10 s first after `mediator.restarting`);
    /// returns when the enclosing task is cancelled. On `mediator.reregister`
    /// it registers every registered component again on the same connection.
    public func run(onConnected: @escaping @Sendable () async -> Void) async {
        let logger = MediatorClient.logger
        var backoff = ReconnectBackoff(initial: Component.initialBackoff, maximum: Component.maxBackoff)
        while !Task.isCancelled {
            let server = ComponentServer(
                components: { [state] target in state.withLockedValue { $0.components[target] } },
                registered: { [state] in state.withLockedValue { Array($0.components.values) } }, logger: logger)
            let client: MediatorClient
            do {
                client = try await MediatorClient.connect(
                    socketPath: socketPath, name: name, maxFrameBytes: ProtocolConstants.defaultMaxFrameBytes,
                    fds: acceptsDescriptors, hooks: server.hooks, tracer: nil)
            } catch {
                server.stop()
                if Task.isCancelled { break }
                let delay = backoff.next()
                logger.info("cannot connect to the daemon (\(error)); retrying in \(delay)")
                try? await Task.sleep(for: delay)
                continue
            }
            server.attach(client)
            state.withLockedValue { $0 = State(client: client) }
            backoff.reset()
            await onConnected()
            await withTaskCancellationHandler {
                await client.connection.waitUntilClosed()
            } onCancel: {
                client.connection.close()
            }
            state.withLockedValue { $0 = State() }
            server.stop()
            if Task.isCancelled { break }
            if client.connection.daemonRestarting.load(ordering: .relaxed) { backoff.restarting() }
            let delay = backoff.next()
            logger.info("connection to the daemon lost; reconnecting in \(delay)")
            try? await Task.sleep(for: delay)
        }
    }

    /// Registers `component` on the current connection.
    ///
    /// - Throws: `component_unavailable` when not connected; the daemon's
    ///   refusal (`already_registered`, `overloaded`...) otherwise.
    public func register(_ component: Component) async throws(MediatorError) {
        let target = component.target
        // Entered first: the daemon may route a call to it as soon as it registers.
        let client = state.withLockedValue { state -> MediatorClient? in
            if state.client != nil { state.components[target] = component }
            return state.client
        }
        guard let client else { throw MediatorError(.componentUnavailable, "not connected to the daemon") }
        do {
            _ = try await client.connection.call(
                ProtocolConstants.daemonTarget, "register", params: component.registerParams, timeoutMs: nil)
        } catch {
            state.withLockedValue { state in
                if state.client === client { state.components[target] = nil }
            }
            throw error
        }
    }

    /// Unregisters `target` (nothing when it is not registered).
    public func unregister(_ target: String) async {
        guard let client = state.withLockedValue({ $0.components[target] == nil ? nil : $0.client }) else { return }
        // A failure leaves nothing to do: the registration ends with the connection anyway.
        _ = try? await client.connection.call(
            ProtocolConstants.daemonTarget, "unregister", params: ["target": .string(target)], timeoutMs: nil)
        state.withLockedValue { state in
            if state.client === client { state.components[target] = nil }
        }
    }
}
