import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

@Suite("Broker: monitor")
struct BrokerMonitorTests {
    static let root = PeerCredentials(pid: 10, uid: 0, gid: 0)

    @Test func aMonitorSeesRequestsResponsesAndEventsWithBothPeers() {
        let d = BrokerDriver()
        d.connect(1, credentials: Self.root)
        #expect(d.daemon("monitor", from: 1)?["result"] == .object([:]))
        d.connect(2)
        d.register("Svc", from: 2)
        d.connect(3)
        d.send(#"{"id":"c","target":"Svc","action":"a","params":{"x":1}}"#, from: 3)
        let forwarded = d.takeOne(2)
        d.advance(ms: 5)
        d.send(#"{"id":\#(forwarded?["id"]?.intValue ?? 0),"result":"ok"}"#, from: 2)
        d.send(#"{"event":"user.login","data":{"n":1}}"#, from: 3)
        let records = d.takeJSON(1).compactMap { $0["data"] }
        #expect(records.map { $0["type"] } == ["request", "response", "event"])
        #expect(records[0]["from"]?["pid"] == 4103)
        #expect(records[0]["to"]?["pid"] == 4102)
        #expect(records[0]["message"]?["params"] == ["x": 1])
        #expect(records[1]["elapsed_us"] == 5000)
        #expect(records[1]["message"] == ["id": "c", "result": "ok"])
        #expect(records[2]["event"] == "user.login")
        #expect(records[2]["message"] == ["event": "user.login", "data": ["n": 1]])
    }

    @Test func filtersByTargetAndEvent() {
        let d = BrokerDriver()
        d.connect(1, credentials: Self.root)
        _ = d.daemon("monitor", #"{"targets":["Wanted"],"events":["keep.*"]}"#, from: 1)
        d.connect(2)
        d.register("Other", from: 2)
        d.connect(3)
        d.send(#"{"id":1,"target":"Other","action":"a"}"#, from: 3)
        d.send(#"{"event":"drop.me"}"#, from: 3)
        d.send(#"{"event":"keep.me"}"#, from: 3)
        #expect(d.takeJSON(1).compactMap { $0["data"]?["event"]?.stringValue } == ["keep.me"])
    }

    /// mediatorctl subscribes to `mediator.monitor` to receive the records; a
    /// policy that grants `monitor` alone must not refuse that subscription,
    /// while other subscriptions stay checked.
    @Test func subscribingToTheRecordsNeedsOnlyTheMonitorGrant() {
        let d = BrokerDriver()
        d.broker.loadPolicy(Policy(rules: [Policy.Rule(allow: .init(monitor: true))]))
        d.connect(1)
        #expect(d.daemon("subscribe", #"{"events":["mediator.monitor"]}"#, from: 1)?["result"] != nil)
        #expect(d.daemon("monitor", from: 1)?["result"] != nil)
        #expect(d.daemon("subscribe", #"{"events":["mediator.*"]}"#, from: 1)?["error"]?["code"] == "forbidden")
    }

    @Test func anOrdinaryUserMayNotMonitorUnderTheDefaultPolicy() {
        let d = BrokerDriver()
        d.broker.loadPolicy(.defaultPolicy(daemonUID: 0))
        d.connect(1)
        let answer = d.daemon("monitor", from: 1)
        #expect(answer?["error"]?["code"] == "forbidden")
        #expect(answer?["error"]?["message"] == "uid 1001 may not monitor")
    }
}
