import Logging
import MediatorProtocol
import MediatorTransport
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Runs the ``Broker`` on one event loop and carries out its effects: writes
/// to connections (flushed once per read cycle), closes, and the timeout
/// wake-up.
///
/// `@unchecked Sendable`: every mutable member is touched only on
/// `eventLoop`, which each entry point asserts.
final class BrokerHost: @unchecked Sendable {
    let eventLoop: any EventLoop
    let broker: Broker
    let logger: Logger
    private var channels: [ConnectionID: any Channel] = [:]
    private var dirty: [ConnectionID] = []
    private var wakeUpTask: Scheduled<Void>?
    private var nextConnectionID: ConnectionID = 1
    private(set) var stopping = false

    init(eventLoop: any EventLoop, broker: Broker, logger: Logger) {
        self.eventLoop = eventLoop
        self.broker = broker
        self.logger = logger
    }

    var connectionCount: Int { channels.count }

    /// Admits a new connection, or nil when the connection limit is reached.
    func open(_ channel: any Channel, credentials: PeerCredentials) -> ConnectionID? {
        eventLoop.preconditionInEventLoop()
        guard !stopping, channels.count < broker.configuration.maxConnections else { return nil }
        let id = nextConnectionID
        nextConnectionID += 1
        channels[id] = channel
        broker.connect(id, credentials: credentials)
        return id
    }

    func received(_ line: InboundLine, from connection: ConnectionID) {
        eventLoop.preconditionInEventLoop()
        apply(broker.receive(line, from: connection, now: .now()))
    }

    /// The end of one read cycle: every connection written to gets one flush.
    func flush() {
        eventLoop.preconditionInEventLoop()
        guard !dirty.isEmpty else { return }
        let touched = dirty
        dirty.removeAll(keepingCapacity: true)
        for connection in touched { channels[connection]?.flush() }
    }

    func closed(_ connection: ConnectionID) {
        eventLoop.preconditionInEventLoop()
        guard channels.removeValue(forKey: connection) != nil else { return }
        apply(broker.disconnect(connection, now: .now()))
        flush()
    }

    func apply(_ effects: [BrokerEffect]) {
        for effect in effects {
            switch effect {
            case .send(let connection, let buffer):
                guard let channel = channels[connection] else { continue }
                channel.write(buffer, promise: nil)
                dirty.append(connection)
            case .close(let connection):
                channels[connection]?.flush()
                channels[connection]?.close(promise: nil)
            case .blockEventLoop:
                while true { Glibc.sleep(3600) }
            case .wakeUp(let deadline):
                wakeUpTask?.cancel()
                wakeUpTask = eventLoop.scheduleTask(deadline: deadline) { [self] in
                    wakeUpTask = nil
                    apply(broker.expireCalls(now: .now()))
                    flush()
                }
            }
        }
    }

    /// A peer that stopped reading: its queue passed the limit.
    func outboundLimitReached(_ connection: ConnectionID) {
        guard let channel = channels[connection] else { return }
        logger.warning(
            "disconnecting a peer that does not read its messages",
            metadata: ["connection": "\(connection)", "limit_bytes": "\(broker.configuration.maxOutboundBytes)"])
        channel.close(promise: nil)
    }

    /// Graceful stop: no new connections; calls in flight get the grace
    /// period, then the rest are answered and every connection is closed.
    func stop(grace: TimeAmount) -> EventLoopFuture<Void> {
        eventLoop.preconditionInEventLoop()
        stopping = true
        let promise = eventLoop.makePromise(of: Void.self)
        finishStop(deadline: .now() + grace, promise: promise)
        return promise.futureResult
    }

    private func finishStop(deadline: NIODeadline, promise: EventLoopPromise<Void>) {
        guard broker.pending.count == 0 || NIODeadline.now() >= deadline else {
            eventLoop.scheduleTask(in: .milliseconds(10)) { self.finishStop(deadline: deadline, promise: promise) }
            return
        }
        apply(broker.answerAllPending(MediatorError(.componentUnavailable, "mediatord is stopping")))
        flush()
        let closes = channels.values.map { $0.close() }
        EventLoopFuture.andAllComplete(closes, on: eventLoop).cascade(to: promise)
    }
}
