import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// The policy as the broker applies it: each kind of request is checked, and
/// a denial is `forbidden` naming what was denied.
@Suite("Broker: access policy")
struct BrokerPolicyTests {
    /// uid 1001 (connection 1) may register Notes and call Notes/* and */ping;
    /// subscribe and publish user.*; nothing else. uid 1002 (connection 2) may
    /// register Svc only.
    func driver() -> BrokerDriver {
        let d = BrokerDriver()
        d.broker.loadPolicy(Policy(rules: [
            Policy.Rule(match: .init(uid: 1001), allow: .init(
                register: [.exact("Notes")],
                call: [.init(target: .exact("Notes"), action: .any), .init(target: .any, action: .exact("ping"))],
                subscribe: [.prefix("user.")], publish: [.prefix("user.")])),
            Policy.Rule(match: .init(uid: 1002), allow: .init(register: [.exact("Svc")])),
        ]))
        d.connect(1)
        d.connect(2)
        return d
    }

    func error(_ answer: JSONValue?) -> String? { answer?["error"]?["message"]?.stringValue }

    @Test func registerIsChecked() {
        let d = driver()
        #expect(d.daemon("register", #"{"target":"Notes","actions":["add"]}"#, from: 1)?["result"] != nil)
        #expect(error(d.daemon("register", #"{"target":"Other","actions":["a"]}"#, from: 1)) == #"uid 1001 may not register "Other""#)
    }

    @Test func callsAndURLsAreChecked() {
        let d = driver()
        d.register("Svc", actions: #"["ping","secret"]"#, from: 2)
        d.send(#"{"id":1,"target":"Svc","action":"ping"}"#, from: 1)
        #expect(d.takeJSON(2).count == 1, "allowed by */ping")
        d.send(#"{"id":2,"target":"Svc","action":"secret"}"#, from: 1)
        #expect(error(d.takeOne(1)) == #"uid 1001 may not call "Svc/secret""#)
        let opened = d.daemon("open", #"{"url":"app://Svc/secret"}"#, from: 1)
        #expect(error(opened) == #"uid 1001 may not call "Svc/secret""#, "open is checked as the call it reaches")
        #expect(d.take(2).isEmpty)
    }

    @Test func subscribeAndPublishAreChecked() {
        let d = driver()
        #expect(d.daemon("subscribe", #"{"events":["user.login"]}"#, from: 1)?["result"] != nil)
        #expect(error(d.daemon("subscribe", #"{"events":["*"]}"#, from: 1)) == #"uid 1001 may not subscribe to "*""#)
        #expect(d.daemon("publish", #"{"event":"user.x"}"#, from: 1)?["result"] != nil)
        #expect(error(d.daemon("publish", #"{"event":"sys.x"}"#, from: 1)) == #"uid 1001 may not publish "sys.x""#)
        // A bare event that is denied is dropped (it has no answer).
        _ = d.daemon("subscribe", #"{"events":["user.*"]}"#, from: 1)
        d.send(#"{"event":"user.hi"}"#, from: 2)
        #expect(d.take(1).isEmpty)
    }

    /// A call with descriptors needs `send_fds` for its target besides the
    /// call grant: a denial is `forbidden`, names it, and releases them.
    @Test func sendingDescriptorsNeedsTheSendFdsGrant() {
        let d = BrokerDriver()
        d.broker.passesDescriptors = true
        d.broker.loadPolicy(Policy(rules: [
            Policy.Rule(match: .init(uid: 1001), allow: .init(register: [.any], call: [.any])),
            Policy.Rule(match: .init(uid: 1002), allow: .init(call: [.any], sendDescriptors: [.exact("Files")])),
        ]))
        for connection: ConnectionID in [1, 2] {
            d.connect(connection)
            _ = d.daemon("hello", #"{"protocol":1,"fds":true}"#, from: connection)
        }
        d.register("Files", from: 1)
        d.register("Notes", from: 1)
        let allowed = d.send(#"{"id":1,"target":"Files","action":"a","fds":1}"#, descriptors: 1, from: 2)
        #expect(d.takeOne(1)?["fds"] == 1)
        #expect(d.descriptorsSent[1] == [allowed])
        let denied = d.send(#"{"id":2,"target":"Notes","action":"a","fds":2}"#, descriptors: 2, from: 2)
        let answer = d.takeOne(2)
        #expect(errorCode(answer) == "forbidden")
        #expect(error(answer) == #"uid 1002 may not send file descriptors to "Notes""#)
        #expect(d.descriptorsReleased == [denied])
        #expect(d.take(1).isEmpty)
        // The same call without descriptors is allowed.
        d.send(#"{"id":3,"target":"Notes","action":"a"}"#, from: 2)
        #expect(d.takeOne(1)?["action"] == "a")
        #expect(d.broker.statistics.uids[1002]?.policyDenials == 1)
        #expect(d.descriptorsHeld.isEmpty)
    }

    /// A caller on another host (through this daemon's bridge) is checked
    /// against the remote rules for `send_fds` too.
    @Test func aRemoteCallersDescriptorsNeedARemoteSendFdsGrant() {
        let d = BrokerDriver()
        d.broker.passesDescriptors = true
        d.broker.ownProcessID = BrokerDriver.credentials(1).pid
        d.broker.loadPolicy(Policy(rules: [
            Policy.Rule(match: .everyone, allow: .everything),
            Policy.Rule(match: Policy.Match(host: "hostA"), allow: .init(call: [.any], sendDescriptors: [.exact("Files")])),
        ]))
        for connection: ConnectionID in [1, 2] {
            d.connect(connection)
            _ = d.daemon("hello", #"{"protocol":1,"fds":true}"#, from: connection)
        }
        d.register("Files", from: 2)
        d.register("Notes", from: 2)
        let remote = #""remote_caller":{"host":"hostA","uid":1000,"pid":77}"#
        let allowed = d.send(#"{"id":1,"target":"Files","action":"a","fds":1,\#(remote)}"#, descriptors: 1, from: 1)
        #expect(d.takeOne(2)?["fds"] == 1)
        #expect(d.descriptorsSent[2] == [allowed])
        let denied = d.send(#"{"id":2,"target":"Notes","action":"a","fds":1,\#(remote)}"#, descriptors: 1, from: 1)
        #expect(error(d.takeOne(1)) == #"uid 1000 on host "hostA" may not send file descriptors to "Notes""#)
        #expect(d.descriptorsReleased == [denied])
        #expect(d.descriptorsHeld.isEmpty)
    }

    @Test func theDaemonsOpenActionsStayOpenAndStartStopNeedAGrant() {
        let d = driver()
        #expect(d.daemon("list", from: 2)?["result"] != nil)
        #expect(d.daemon("ping", from: 2)?["result"] != nil)
        #expect(error(d.daemon("stop", #"{"target":"X"}"#, from: 2)) == #"uid 1002 may not call "mediator/stop""#)
        #expect(error(d.daemon("monitor", from: 2)) == "uid 1002 may not monitor")
    }

    @Test func reexecIsAnAdministratorsAction() {
        let d = BrokerDriver()
        d.broker.loadPolicy(Policy(rules: [
            Policy.Rule(match: .init(uid: 1001), allow: .init(call: [.any])),
            Policy.Rule(match: .init(uid: 1002), allow: .init(call: [.init(target: .exact("mediator"), action: .exact("reexec"))])),
        ]))
        d.connect(1)
        d.connect(2)
        // `*/*` is not enough: only a rule naming the daemon's target grants it.
        #expect(error(d.daemon("reexec", from: 1)) == #"uid 1001 may not call "mediator/reexec""#)
        #expect(d.reexecRequests.isEmpty)
        d.send(#"{"id":1,"target":"mediator","action":"reexec"}"#, from: 2)
        #expect(d.peek(2).isEmpty, "answered by the image that carries on, not now")
        #expect(d.reexecRequests == [2])
    }
}
