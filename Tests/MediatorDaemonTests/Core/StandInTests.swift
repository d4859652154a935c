import MediatorConfiguration
import MediatorProtocol
import Testing

@testable import MediatorDaemon

/// Stand-ins for targets served on other hosts (the NATS bridge's imports):
/// they join any target, get calls only when no local instance is there,
/// and only the daemon's own process may register them.
@Suite("Stand-ins for other hosts' targets")
struct StandInTests {
    let creds = PeerCredentials(pid: 10, uid: 20, gid: 30)

    func register(
        _ r: inout Registry, _ name: String, _ actions: [ActionSpec] = [ActionSpec(name: "a")],
        mode: Registry.Mode = .exclusive, connection: ConnectionID, remote: String? = nil
    ) throws(MediatorError) -> Int {
        try r.register(
            target: name, actions: actions, mode: mode, description: nil, connection: connection, credentials: creds,
            peerName: nil, remoteHost: remote)
    }

    @Test func aLocalInstanceIsPickedBeforeAnyStandIn() throws {
        var r = Registry()
        _ = try register(&r, "T", mode: .pool, connection: 1, remote: "hostB")
        // Alone, the stand-in gets the calls.
        #expect(r.pickInstance(of: "T")?.connection == 1)
        // An exclusive local registration is accepted beside it and defines the target.
        _ = try register(&r, "T", [ActionSpec(name: "a"), ActionSpec(name: "b")], connection: 2)
        #expect(r.target("T")?.mode == .exclusive)
        #expect(r.target("T")?.actionsByName.keys.sorted() == ["a", "b"])
        for _ in 0..<5 { #expect(r.pickInstance(of: "T")?.connection == 2) }
        // A second local instance is refused as before (exclusive).
        #expect(throws: MediatorError.self) { _ = try register(&r, "T", connection: 3) }
        // Another stand-in joins whatever is there.
        _ = try register(&r, "T", mode: .pool, connection: 4, remote: "hostC")
        for _ in 0..<5 { #expect(r.pickInstance(of: "T")?.connection == 2) }
        // The local instance gone: the stand-ins share the calls.
        _ = try r.unregister(target: "T", connection: 2)
        let picked = Set((0..<4).compactMap { _ in r.pickInstance(of: "T")?.connection })
        #expect(picked == [1, 4])
        _ = try r.unregister(target: "T", connection: 1)
        _ = try r.unregister(target: "T", connection: 4)
        #expect(r.target("T") == nil)
    }

    @Test func localPoolInstancesShareAndStandInsWait() throws {
        var r = Registry()
        _ = try register(&r, "P", mode: .pool, connection: 1)
        _ = try register(&r, "P", mode: .pool, connection: 2, remote: "hostB")
        _ = try register(&r, "P", mode: .pool, connection: 3)
        let picked = Set((0..<6).compactMap { _ in r.pickInstance(of: "P")?.connection })
        #expect(picked == [1, 3])
    }

    @Test func onlyTheDaemonsOwnProcessRegistersStandIns() {
        let d = BrokerDriver()
        d.connect(1)
        d.send(#"{"id":1,"target":"mediator","action":"register","params":{"target":"T","actions":["a"],"remote":{"host":"hostB"}}}"#, from: 1)
        let refused = d.take(1).first.flatMap { try? JSONParser.parse($0) }
        #expect(refused?["error"]?["code"] == "forbidden", "\(String(describing: refused))")

        d.broker.ownProcessID = BrokerDriver.credentials(2).pid
        d.connect(2)
        d.send(#"{"id":2,"target":"mediator","action":"register","params":{"target":"T","actions":["a"],"mode":"pool","remote":{"host":"hostB"}}}"#, from: 2)
        #expect(d.take(2).first.flatMap { try? JSONParser.parse($0) }?["result"]?["target"] == "T")
        d.send(#"{"id":3,"target":"mediator","action":"register","params":{"target":"U","actions":["a"],"remote":{"host":""}}}"#, from: 2)
        #expect(d.take(2).first.flatMap { try? JSONParser.parse($0) }?["error"]?["code"] == "bad_request")
        // list shows where the stand-in's target is served.
        let listed = d.daemon("list", "{}", from: 1)
        let instance = listed?["result"]?["targets"]?.arrayValue?.first?["instances"]?.arrayValue?.first
        #expect(instance?["remote_host"] == "hostB", "\(String(describing: listed))")
    }

    /// The daemon handed the call to the bridge, not to the other host's
    /// component: whether that one ran it, it cannot tell.
    @Test func aCallToAStandInThatTheDaemonAnswersHasAnUnknownDelivery() {
        let d = BrokerDriver()
        d.broker.ownProcessID = BrokerDriver.credentials(2).pid
        d.connect(1)
        d.connect(2)
        d.connect(3)
        d.send(#"{"id":1,"target":"mediator","action":"register","params":{"target":"T","actions":["a"],"mode":"pool","remote":{"host":"hostB"}}}"#, from: 2)
        _ = d.take(2)
        d.send(#"{"id":"t","target":"T","action":"a","timeout_ms":100}"#, from: 1)
        d.send(#"{"id":"u","target":"T","action":"a","timeout_ms":60000}"#, from: 1)
        _ = d.take(2)
        d.advance(ms: 100)
        d.expire()
        #expect(d.take(1) == [errorLine(id: #""t""#, "timeout", #"no response from "T" within 100 ms"#, delivered: nil)])
        d.disconnect(2)
        #expect(d.take(1) == [errorLine(
            id: #""u""#, "component_unavailable", #"the component serving "T" disconnected with the call in flight"#, delivered: nil)])
        // A local instance: it got the call.
        d.register("T", actions: #"["a"]"#, mode: "pool", from: 3)
        d.send(#"{"id":"v","target":"T","action":"a","timeout_ms":100}"#, from: 1)
        _ = d.take(3)
        d.advance(ms: 100)
        d.expire()
        #expect(d.take(1) == [errorLine(id: #""v""#, "timeout", #"no response from "T" within 100 ms"#, delivered: true)])
    }

    @Test func aRemoteCallerIsHonouredFromTheDaemonsOwnProcessOnly() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("Notes", actions: #"["add"]"#, from: 2)
        d.broker.loadPolicy(Policy(rules: [
            Policy.Rule(match: .everyone, allow: .everything), Policy.Rule(match: Policy.Match(remote: true), allow: .everything),
        ]))
        let remote = #""remote_caller":{"host":"hostA","uid":1000,"pid":77,"name":"cli"}"#
        // Anyone else: forbidden.
        d.send(#"{"id":1,"target":"Notes","action":"add",\#(remote)}"#, from: 1)
        #expect(d.take(1).first.flatMap { try? JSONParser.parse($0) }?["error"]?["code"] == "forbidden")
        // The bridge (this process): forwarded with caller.remote.
        d.broker.ownProcessID = BrokerDriver.credentials(1).pid
        d.send(#"{"id":2,"target":"Notes","action":"add",\#(remote)}"#, from: 1)
        let forwarded = d.take(2).first.flatMap { try? JSONParser.parse($0) }
        #expect(forwarded?["caller"]?["remote"] == ["host": "hostA", "uid": 1000, "pid": 77, "name": "cli"], "\(String(describing: forwarded))")
        #expect(forwarded?["caller"]?["pid"]?.intValue == Int64(BrokerDriver.credentials(1).pid))
        // Malformed: bad_request.
        d.send(#"{"id":3,"target":"Notes","action":"add","remote_caller":{"host":""}}"#, from: 1)
        #expect(d.take(1).first.flatMap { try? JSONParser.parse($0) }?["error"]?["code"] == "bad_request")
    }
}
