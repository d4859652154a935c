import MediatorConfiguration
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

    /// The calls the daemon answers itself never reach a component: a
    /// monitor must still see them, with who called and why (the error line).
    @Test func aMonitorSeesTheCallsTheDaemonRefuses() {
        let d = BrokerDriver()
        d.broker.loadPolicy(Policy(rules: [
            Policy.Rule(match: .init(uid: 0), allow: .everything),
            Policy.Rule(match: .init(uid: 1002), allow: .init(register: [.any])),
            Policy.Rule(match: .init(uid: 1003), allow: .init(call: [
                .init(target: .exact("Svc"), action: .any), .init(target: .exact("Nobody"), action: .any),
            ])),
        ]))
        d.connect(1, credentials: Self.root)
        _ = d.daemon("monitor", from: 1)
        d.connect(2)
        d.register("Svc", actions: #"[{"name":"show","params":{"type":"object","required":["title"]}}]"#, from: 2)
        d.register("Other", from: 2)
        d.connect(3)
        d.send(#"{"id":1,"target":"Nobody","action":"a"}"#, from: 3)
        d.send(#"{"id":2,"target":"Svc","action":"nope"}"#, from: 3)
        d.send(#"{"id":3,"target":"Svc","action":"show","params":{}}"#, from: 3)
        d.send(#"{"id":4,"target":"Other","action":"a"}"#, from: 3)
        d.send(#"{"target":"Nobody","action":"a"}"#, from: 3)
        #expect(d.takeJSON(3).count == 4, "each call with an id is answered")
        let records = d.takeJSON(1).compactMap { $0["data"] }
        #expect(records.map { $0["type"] } == Array(repeating: "refused", count: 5))
        #expect(records.map { $0["message"]?["error"]?["code"] } == [
            "target_not_found", "action_not_found", "invalid_params", "forbidden", "target_not_found",
        ])
        #expect(records.map { $0["message"]?["id"] } == [1, 2, 3, 4, .null], "a call without id is recorded too")
        #expect(records.map { $0["target"] } == ["Nobody", "Svc", "Svc", "Other", "Nobody"])
        #expect(records.map { $0["action"] } == ["a", "nope", "show", "a", "a"])
        #expect(records.allSatisfy { $0["from"]?["pid"] == 4103 && $0["to"] == nil })
    }

    @Test func refusalsFollowTheTargetFilter() {
        let d = BrokerDriver()
        d.connect(1, credentials: Self.root)
        _ = d.daemon("monitor", #"{"targets":["Wanted"]}"#, from: 1)
        d.connect(3)
        d.send(#"{"id":1,"target":"Other","action":"a"}"#, from: 3)
        d.send(#"{"id":2,"target":"Wanted","action":"a"}"#, from: 3)
        #expect(d.takeJSON(1).compactMap { $0["data"]?["target"]?.stringValue } == ["Wanted"])
    }

    /// `uptime_us` counts from the daemon's start, as `uptime_s` in stats
    /// does: the driver's clock starts 7 s into the machine's uptime.
    @Test func recordTimesAreTheDaemonsUptime() {
        let d = BrokerDriver()
        d.broker.statisticsStart = d.start
        d.connect(1, credentials: Self.root)
        _ = d.daemon("monitor", from: 1)
        d.connect(3)
        d.advance(ms: 5)
        d.send(#"{"event":"user.login"}"#, from: 3)
        #expect(d.takeOne(1)?["data"]?["uptime_us"] == 5000)
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
