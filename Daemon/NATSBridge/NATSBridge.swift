import Logging
import MediatorProtocol
import ServiceLifecycle
import Synchronization

/// mediatord's bridge to other hosts through NATS (issue 14,
/// docs/scale-out.md): a service that runs a ``BridgeSession`` with the
/// current settings, and a new one when ``reload(_:)`` (SIGHUP) changes
/// them. Without settings it waits, so that a reload can turn it on.
package final class NATSBridge: Service, Sendable {
    private let logger: Logger
    /// The settings to run with, and a number that changes with them.
    private let current: Mutex<(settings: NATSBridgeSettings?, generation: Int)>
    /// The session running now, for its figures.
    private let session = Mutex<BridgeSession?>(nil)
    /// One element per change of the settings: what `run()` waits on while
    /// it has none, so that an idle daemon does not wake up to look.
    private let changes: AsyncStream<Void>
    private let changed: AsyncStream<Void>.Continuation

    package init(settings: NATSBridgeSettings?, logger: Logger) {
        self.logger = logger
        self.current = Mutex((settings, 0))
        (changes, changed) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// New settings (nil: no bridge). A session with other settings is
    /// stopped and one with the new settings started; the same ones change
    /// nothing.
    package func reload(_ settings: NATSBridgeSettings?) {
        let changed = current.withLock { current -> Bool in
            guard current.settings != settings else { return false }
            current = (settings, current.generation + 1)
            return true
        }
        if changed {
            logger.info("NATS settings changed; the bridge restarts with them")
            self.changed.yield()
            session.withLock { $0 }?.nudge()
        }
    }

    /// The `"nats"` member of `mediator/stats` (docs/scale-out.md,
    /// "Statistics"); nil while no bridge runs.
    package var statistics: JSONValue? {
        session.withLock { $0 }?.statistics
    }

    package func run() async throws {
        try? await cancelWhenGracefulShutdown {
            var wakeUps = self.changes.makeAsyncIterator()
            while !Task.isCancelled {
                let (settings, generation) = self.current.withLock { $0 }
                let active: @Sendable () -> Bool = { self.current.withLock { $0.generation } == generation }
                if let settings {
                    do {
                        let session = BridgeSession(settings: settings, logger: self.logger)
                        self.session.withLock { $0 = session }
                        defer { self.session.withLock { $0 = nil } }
                        try await session.run(while: active)
                    } catch {
                        // Bad settings (a credentials file that cannot be read, say):
                        // local routing goes on; a reload may fix them.
                        self.logger.error("the NATS bridge stopped: \(error)")
                    }
                }
                // Until the settings change (or after a failure, until they
                // do); the iteration ends when the task is cancelled.
                while !Task.isCancelled && active() {
                    guard await wakeUps.next() != nil else { return }
                }
            }
        }
    }
}
