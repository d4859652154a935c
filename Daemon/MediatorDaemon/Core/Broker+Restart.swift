import MediatorProtocol

extension Broker {
    /// The `reason` of `mediator.restarting` on a graceful stop.
    static let stoppingReason = "stopping"

    /// Tells every peer that the daemon is about to close its connection
    /// and that a daemon will listen on the socket again
    /// (`mediator.restarting`), so that libraries reconnect at once
    /// instead of backing off. The host closes the connections after it.
    package func announceRestart(reason: String = Broker.stoppingReason) -> [BrokerEffect] {
        let line = writer.event(DaemonEventName.restarting, data: ["reason": .string(reason)])
        for connection in peers.keys { send(connection, line) }
        return takeEffects()
    }
}
