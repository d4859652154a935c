import Logging
import MediatorProtocol
import ServiceLifecycle

/// The loop that registers the component and serves its calls, connecting
/// again after a lost connection.
extension Component {
    static let initialBackoff: Duration = .milliseconds(50)
    static let maxBackoff: Duration = .seconds(2)

    /// The loop of ``run()``, with the configuration given (the deprecated
    /// `run(socketPath:name:onRegistered:)` passes its own).
    func serve(
        socketPath: String?, name: String?, onRegistered: (@Sendable () async -> Void)?
    ) async throws(MediatorError) {
        var logger = self.logger
        logger[metadataKey: "target"] = "\(target)"
        var registeredOnce = false
        var backoff = ReconnectBackoff(initial: Self.initialBackoff, maximum: Self.maxBackoff)

        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            let server = ComponentServer(component: self, logger: logger)
            let client: MediatorClient
            do throws(MediatorError) {
                client = try await MediatorClient.connect(
                    socketPath: socketPath, name: name, maxFrameBytes: ProtocolConstants.defaultMaxFrameBytes,
                    fds: acceptsDescriptors, hooks: server.hooks, tracer: tracer, logger: logger)
                server.attach(client)
                // Not traced: registering is no one's call to follow.
                _ = try await client.connection.call(
                    ProtocolConstants.daemonTarget, "register", params: registerParams, timeoutMs: nil)
            } catch {
                server.stop()
                if Task.isCancelled || Task.isShuttingDownGracefully { break }
                if !registeredOnce { throw error }
                let delay = backoff.next()
                logger.info("cannot register again (\(error)); retrying in \(delay)")
                _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: delay) }
                continue
            }
            // The first registration is routine; one after a reconnect is news.
            if registeredOnce { logger.info("registered again") } else { logger.debug("registered") }
            registeredOnce = true
            backoff.reset()
            if let onRegistered { await onRegistered() }

            let draining = DrainTask()
            await withGracefulShutdownHandler {
                await withTaskCancellationHandler {
                    await client.connection.waitUntilClosed()
                } onCancel: {
                    client.connection.close()
                }
            } onGracefulShutdown: { [self, logger] in
                server.leave()
                draining.start { await self.drain(client, server, logger: logger) }
            }
            draining.cancel()
            server.stop()
            if Task.isCancelled { break }
            if draining.started {
                logger.info("stopped gracefully")
                break
            }
            if server.isLeaving {
                logger.info("the daemon asked this component to stop (mediator.stop)")
                break
            }
            if Task.isShuttingDownGracefully { break }
            if client.connection.daemonRestarting.load(ordering: .relaxed) { backoff.restarting() }
            let delay = backoff.next()
            logger.info("connection to the daemon lost; reconnecting in \(delay)")
            _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: delay) }
        }
    }
}
