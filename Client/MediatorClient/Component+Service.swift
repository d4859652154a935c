import Logging
import ServiceLifecycle

extension Component: Service {
    /// Connects to ``socketPath`` (named ``connectionName``), registers the
    /// target, calls ``onRegistered``, and serves calls
    /// concurrently (a task per call, except a handler without `await` on
    /// ``HandlerExecutor/connection``, answered at once) until the enclosing task is cancelled;
    /// then it cancels the handlers still running, closes the connection and
    /// returns.
    ///
    /// A `mediator.cancel` event cancels the task of the handler concerned,
    /// and nothing is answered for that call. When the connection drops (a
    /// daemon restart), it reconnects with exponential backoff (50 ms,
    /// doubling up to 2 s, for as long as it is not cancelled; every 50 ms
    /// for 10 s first when the daemon said `mediator.restarting`), registers
    /// again and calls `onRegistered` again. A `mediator.reregister` event
    /// (the daemon lost its state but kept the connection) makes it register
    /// again on the same connection. A `mediator.stop` event (the
    /// daemon started this component on demand and it has been idle, or it
    /// was stopped by hand) makes it close the connection and return.
    ///
    /// A ServiceLifecycle `Service`: put it in a `ServiceGroup` as it is.
    /// On graceful shutdown (SIGTERM through the group) it first
    /// unregisters its target, so that the daemon sends new calls to other
    /// instances of a pool (or holds them for the next start of an
    /// activatable component); it then lets the calls in flight finish for
    /// up to ``shutdownGracePeriod``, cancels the handlers still running,
    /// closes the connection and returns. Cancelling the task stops it at
    /// once.
    ///
    /// - Throws: when the first connection or the first registration fails
    ///   (`unreachable`, `already_registered`, `bad_request` for bad specs...),
    ///   so that a misconfiguration shows at once. Later failures are
    ///   retried.
    public func run() async throws(MediatorError) {
        try await serve(socketPath: socketPath, name: connectionName, onRegistered: onRegistered)
    }

    /// Graceful shutdown: unregister, let the calls in flight finish within
    /// the grace period, then close (which cancels what still runs).
    func drain(_ client: MediatorClient, _ server: ComponentServer, logger: Logger) async {
        logger.info("shutting down gracefully: unregistering, then letting the calls in flight finish")
        do {
            _ = try await client.connection.call(
                ProtocolConstants.daemonTarget, "unregister", params: ["target": .string(target)], timeoutMs: nil)
        } catch {
            logger.notice("could not unregister before shutting down: \(error)")
        }
        let grace = shutdownGracePeriod
        let finished = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await server.waitUntilIdle()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: grace)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if !finished {
            logger.notice("calls still in flight after the shutdown grace period are cancelled", metadata: ["grace": "\(grace)"])
        }
        client.connection.close()
    }
}
