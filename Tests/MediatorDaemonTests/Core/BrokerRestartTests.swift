import MediatorProtocol
import Testing

@testable import MediatorDaemon

@Suite struct BrokerRestartTests {
    @Test func announceRestartTellsEveryPeerOnce() {
        let d = BrokerDriver()
        for connection: ConnectionID in [1, 2, 3] { d.connect(connection) }
        d.register("Notes", from: 2)
        d.subscribe(["mediator.*"], from: 3)
        for connection: ConnectionID in [1, 2, 3] { _ = d.take(connection) }

        d.apply(d.broker.announceRestart())

        let event: JSONValue = ["event": "mediator.restarting", "data": ["reason": "stopping"]]
        // Every peer, subscribed or not, once (a subscriber to mediator.* too).
        for connection: ConnectionID in [1, 2, 3] { #expect(d.takeJSON(connection) == [event]) }
        // It closes nothing by itself: the host does, after the lines leave.
        #expect(d.closed.isEmpty)
    }

    @Test func announceRestartWithNoPeersDoesNothing() {
        let d = BrokerDriver()
        #expect(d.apply(d.broker.announceRestart()).isEmpty)
    }
}
