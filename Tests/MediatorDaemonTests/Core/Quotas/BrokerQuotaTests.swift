import Logging
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// Per-uid quotas, with several connections of one uid.
@Suite("Broker: per-uid quotas")
struct BrokerQuotaTests {
    static let alice = PeerCredentials(pid: 500, uid: 1000, gid: 1000, executable: "/usr/bin/alice-tool")
    static let bob = PeerCredentials(pid: 600, uid: 1001, gid: 1001)

    @Test func connectionsPerUIDAreCountedAndNamedWhenRefused() {
        let d = BrokerDriver { $0.maxConnectionsPerUID = 2 }
        #expect(d.broker.connect(1, credentials: Self.alice) == nil)
        #expect(d.broker.connect(2, credentials: Self.alice) == nil)
        let refusal = d.broker.connect(3, credentials: Self.alice)
        #expect(refusal?.code == .overloaded)
        #expect(refusal?.message == "uid 1000 reached its quota max_connections_per_uid = 2")
        #expect(refusal?.data == ["quota": "max_connections_per_uid", "limit": 2])
        #expect(d.broker.connect(4, credentials: Self.bob) == nil, "another uid is not affected")
        d.disconnect(1)
        #expect(d.broker.connect(5, credentials: Self.alice) == nil, "a closed connection frees its place")
    }

    @Test func rootIsExempt() {
        let d = BrokerDriver { $0.maxConnectionsPerUID = 1 }
        let root = PeerCredentials(pid: 1, uid: 0, gid: 0)
        #expect(d.broker.connect(1, credentials: root) == nil)
        #expect(d.broker.connect(2, credentials: root) == nil)
    }

    @Test func callsInFlightAddUpAcrossAUIDsConnections() {
        let d = BrokerDriver { $0.maxCallsInFlightPerUID = 3 }
        d.connect(9)
        d.register("Svc", from: 9)
        d.connect(1, credentials: Self.alice)
        d.connect(2, credentials: Self.alice)
        d.send(#"{"id":1,"target":"Svc","action":"a"}"#, from: 1)
        d.send(#"{"id":2,"target":"Svc","action":"a"}"#, from: 1)
        d.send(#"{"id":3,"target":"Svc","action":"a"}"#, from: 2)
        d.send(#"{"id":4,"target":"Svc","action":"a"}"#, from: 2)
        #expect(d.takeJSON(1).isEmpty)
        let refused = d.takeOne(2)
        #expect(refused?["id"] == 4)
        #expect(refused?["error"]?["message"] == "uid 1000 reached its quota max_calls_in_flight_per_uid = 3")
        d.connect(3, credentials: Self.bob)
        d.send(#"{"id":5,"target":"Svc","action":"a"}"#, from: 3)
        #expect(d.take(3).isEmpty, "bob's call goes through")
    }

    @Test func subscriptionsAndRegistrationsPerUID() {
        let d = BrokerDriver {
            $0.maxSubscriptionsPerUID = 2
            $0.maxRegistrationsPerUID = 1
        }
        d.connect(1, credentials: Self.alice)
        d.connect(2, credentials: Self.alice)
        #expect(d.daemon("subscribe", #"{"events":["a.*","b"]}"#, from: 1)?["result"] == .object([:]))
        #expect(d.daemon("subscribe", #"{"events":["a.*"]}"#, from: 1)?["result"] == .object([:]), "already held: no more quota")
        #expect(d.daemon("subscribe", #"{"events":["c"]}"#, from: 2)?["error"]?["code"] == "overloaded")
        #expect(d.daemon("register", #"{"target":"One","actions":[]}"#, from: 1)?["result"] != nil)
        let second = d.daemon("register", #"{"target":"Two","actions":[]}"#, from: 2)
        #expect(second?["error"]?["message"] == "uid 1000 reached its quota max_registrations_per_uid = 1")
    }

    @Test func aUIDAtItsQuotaIsLoggedOncePerEpisodeAndEveryRefusalCounted() {
        let d = BrokerDriver { $0.maxConnectionsPerUID = 1 }
        let captured = CapturedLogEvents()
        d.broker.logger = Logger(label: "quota-test") { _ in CapturingLogHandler(captured: captured) }
        func warnings() -> Int { captured.events.filter { $0.message.hasPrefix("quota reached") }.count }
        #expect(d.broker.connect(1, credentials: Self.alice) == nil)
        for connection in 2...50 as ClosedRange<ConnectionID> {
            #expect(d.broker.connect(connection, credentials: Self.alice)?.code == .overloaded)
        }
        #expect(warnings() == 1, "one line for 49 refusals")
        #expect(captured.events.first { $0.message.hasPrefix("quota reached") }?.metadata?["uid"] == "1000")
        #expect(d.broker.statistics.uids[1000]?.quotaRefusals["max_connections_per_uid"] == 49, "every refusal counted")
        #expect(d.broker.connect(60, credentials: Self.bob) == nil)
        // Alice fits again, then meets it once more: a new episode, a new line.
        d.disconnect(1)
        #expect(d.broker.connect(61, credentials: Self.alice) == nil)
        #expect(d.broker.connect(62, credentials: Self.alice)?.code == .overloaded)
        #expect(warnings() == 2)
    }
}
