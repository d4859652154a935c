import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

@Suite("Broker: hello, register, unregister, list, describe")
struct BrokerRegistrationTests {
    // MARK: - hello

    @Test func helloAnswersWithServerFacts() {
        let d = BrokerDriver()
        d.connect(7)
        d.send(#"{"id":1,"target":"mediator","action":"hello","params":{"protocol":1}}"#, from: 7)
        #expect(d.take(7) == [
            #"{"id":1,"result":{"connection":7,"max_frame":1048576,"protocol":1,"server":"mediatord","version":"9.8.7-test"}}"#
        ])
    }

    @Test func helloReportsConfiguredFrameLimitAndWorksWithoutParams() {
        let d = BrokerDriver { $0.maxFrameBytes = 4096 }
        d.connect(3)
        d.send(#"{"id":"h","target":"mediator","action":"hello"}"#, from: 3)
        #expect(d.take(3) == [
            #"{"id":"h","result":{"connection":3,"max_frame":4096,"protocol":1,"server":"mediatord","version":"9.8.7-test"}}"#
        ])
    }

    @Test func helloNameAppearsInForwardedCaller() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("Detail", actions: #"["show"]"#, from: 2)
        // Before hello: no name.
        d.send(#"{"id":1,"target":"Detail","action":"show"}"#, from: 1)
        #expect(d.take(2) == [
            #"{"id":1,"target":"Detail","action":"show","params":{},"timeout_ms":30000,"caller":\#(BrokerDriver.callerJSON(1))}"#
        ])
        #expect(d.daemon("hello", #"{"protocol":1,"name":"cli"}"#, from: 1)?["result"]?["protocol"] == 1)
        d.send(#"{"id":2,"target":"Detail","action":"show"}"#, from: 1)
        #expect(d.take(2) == [
            #"{"id":2,"target":"Detail","action":"show","params":{},"timeout_ms":30000,"caller":{"gid":2001,"name":"cli","pid":4101,"uid":1001}}"#
        ])
    }

    @Test func helloNameNeedingEscapesIsEncodedSafely() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", from: 2)
        _ = d.daemon("hello", #"{"name":"a\"b\nc"}"#, from: 1)
        d.send(#"{"target":"T","action":"a"}"#, from: 1)
        let forwarded = d.takeOne(2)
        #expect(forwarded?["caller"] == #"{"gid":2001,"name":"a\"b\nc","pid":4101,"uid":1001}"#.json)
    }

    @Test func helloWithOtherProtocolIsUnsupported() {
        let d = BrokerDriver()
        d.connect(1)
        d.send(#"{"id":5,"target":"mediator","action":"hello","params":{"protocol":2,"name":"x"}}"#, from: 1)
        #expect(d.take(1) == [
            #"{"id":5,"error":{"code":"unsupported_protocol","data":{"delivered":false,"protocols":[1]},"message":"protocol 2 is not spoken here; mediatord speaks 1"}}"#
        ])
        // A string "1" is not the integer 1.
        #expect(errorCode(d.daemon("hello", #"{"protocol":"1"}"#, from: 1)) == "unsupported_protocol")
        // 1.0 is an integral number.
        #expect(d.daemon("hello", #"{"protocol":1.0}"#, from: 1)?["result"]?["protocol"] == 1)
    }

    @Test func helloWithNonStringNameIsBadRequest() {
        let d = BrokerDriver()
        d.connect(1)
        #expect(errorCode(d.daemon("hello", #"{"name":5}"#, from: 1)) == "bad_request")
        let long = String(repeating: "n", count: 257)
        #expect(errorCode(d.daemon("hello", #"{"name":"\#(long)"}"#, from: 1)) == "bad_request")
        let ok = String(repeating: "n", count: 256)
        #expect(d.daemon("hello", #"{"name":"\#(ok)"}"#, from: 1)?["result"] != nil)
    }

    // MARK: - register

    @Test func registerAnswersTargetAndInstance() {
        let d = BrokerDriver()
        d.connect(2)
        d.send(#"{"id":1,"target":"mediator","action":"register","params":{"target":"Detail","actions":["show"]}}"#, from: 2)
        #expect(d.take(2) == [#"{"id":1,"result":{"instance":1,"target":"Detail"}}"#])
        d.send(#"{"id":2,"target":"mediator","action":"register","params":{"target":"Other","actions":[]}}"#, from: 2)
        #expect(d.take(2) == [#"{"id":2,"result":{"instance":2,"target":"Other"}}"#])
        #expect(d.broker.registry.target("Detail")?.instances.map(\.connection) == [2])
    }

    @Test(arguments: [
        #"{"target":"1abc","actions":[]}"#,
        #"{"target":"","actions":[]}"#,
        #"{"target":"a b","actions":[]}"#,
        #"{"target":"_x","actions":[]}"#,
        #"{"target":"\#(String(repeating: "t", count: 129))","actions":[]}"#,
        #"{"actions":[]}"#,
        #"{"target":5,"actions":[]}"#,
        #"{"target":"T"}"#,
        #"{"target":"T","actions":"a"}"#,
        #"{"target":"T","actions":["1bad"]}"#,
        #"{"target":"T","actions":[{"name":"a.b-c_d"},{"name":"x y"}]}"#,
        #"{"target":"T","actions":[{"description":"no name"}]}"#,
        #"{"target":"T","actions":[5]}"#,
        #"{"target":"T","actions":["a","a"]}"#,
        #"{"target":"T","actions":["a",{"name":"a"}]}"#,
        #"{"target":"T","actions":[],"mode":"shared"}"#,
        #"{"target":"T","actions":[],"mode":1}"#,
        #"{"target":"T","actions":[],"description":7}"#,
        #"{"target":"T","actions":[{"name":"a","params":{"type":"nope"}}]}"#,
        #"{"target":"mediator","actions":[]}"#,
    ])
    func registerRejectsBadParams(params: String) {
        let d = BrokerDriver()
        d.connect(2)
        d.connect(9)
        d.subscribe(["*"], from: 9)
        d.send(#"{"id":1,"target":"mediator","action":"register","params":\#(params)}"#, from: 2)
        let answer = d.takeOne(2)
        #expect(answer?["id"] == 1)
        #expect(errorCode(answer) == "bad_request")
        #expect(d.broker.registry.targets.isEmpty)
        #expect(d.take(9).isEmpty, "no mediator.registered event")
    }

    @Test func registeringMediatorIsBadRequest() {
        let d = BrokerDriver()
        d.connect(2)
        d.send(#"{"id":1,"target":"mediator","action":"register","params":{"target":"mediator","actions":["x"]}}"#, from: 2)
        #expect(d.take(2) == [
            errorLine(id: "1", "bad_request", #"the target "mediator" is the daemon itself and cannot be registered"#, delivered: false)
        ])
    }

    @Test func longestValidTargetIsAccepted() {
        let d = BrokerDriver()
        d.connect(2)
        let name = "T" + String(repeating: "x", count: 127)
        #expect(d.register(name, from: 2) == 1)
    }

    @Test func exclusiveTargetIsTaken() {
        let d = BrokerDriver()
        d.connect(2)
        d.connect(3)
        #expect(d.register("X", from: 2) == 1)
        #expect(errorCode(d.daemon("register", #"{"target":"X","actions":["a"]}"#, from: 3)) == "already_registered")
        #expect(errorCode(d.daemon("register", #"{"target":"X","actions":["a"],"mode":"exclusive"}"#, from: 3)) == "already_registered")
        #expect(errorCode(d.daemon("register", #"{"target":"X","actions":["a"],"mode":"pool"}"#, from: 3)) == "already_registered")
        // The same connection may not take it twice either.
        #expect(errorCode(d.daemon("register", #"{"target":"X","actions":["a"]}"#, from: 2)) == "already_registered")
        #expect(d.broker.registry.target("X")?.instances.count == 1)
        // The failed attempts did not use up instance numbers.
        #expect(d.register("Y", from: 3) == 2)
    }

    @Test func poolWithEqualSpecsAddsInstances() {
        let d = BrokerDriver()
        for c in 2...4 { d.connect(c) }
        #expect(d.register("P", actions: #"["a",{"name":"b","description":"B"}]"#, mode: "pool", from: 2) == 1)
        // A bare name and `{"name": ...}` are the same spec.
        #expect(d.register("P", actions: #"[{"name":"a"},{"description":"B","name":"b","url":null}]"#, mode: "pool", from: 3) == 2)
        #expect(d.broker.registry.target("P")?.instances.map(\.instance) == [1, 2])
        // Different specs: refused.
        let answer = d.daemon("register", #"{"target":"P","actions":["a",{"name":"b","description":"other"}],"mode":"pool"}"#, from: 4)
        #expect(answer == errorLine(id: #""d""#, "already_registered", #"pool "P" has different action specs"#, delivered: false).json)
        #expect(errorCode(d.daemon("register", #"{"target":"P","actions":["a"],"mode":"pool"}"#, from: 4)) == "already_registered")
        // An exclusive registration of a pool: refused.
        #expect(errorCode(d.daemon("register", #"{"target":"P","actions":["a",{"name":"b","description":"B"}]}"#, from: 4)) == "already_registered")
        #expect(d.broker.registry.target("P")?.instances.count == 2)
    }

    @Test func registeredEventCarriesTargetInstancePid() {
        let d = BrokerDriver()
        d.connect(2)
        d.connect(9)
        d.subscribe(["mediator.*"], from: 9)
        d.register("Detail", from: 2)
        #expect(d.take(9) == [#"{"event":"mediator.registered","data":{"instance":1,"pid":4102,"target":"Detail"}}"#])
    }

    @Test func registrationEventReachesTheRegistrantWhenSubscribed() {
        let d = BrokerDriver()
        d.connect(2)
        d.subscribe(["mediator.registered"], from: 2)
        d.send(#"{"id":1,"target":"mediator","action":"register","params":{"target":"A","actions":[]}}"#, from: 2)
        #expect(Set(d.take(2)) == [
            #"{"event":"mediator.registered","data":{"instance":1,"pid":4102,"target":"A"}}"#,
            #"{"id":1,"result":{"instance":1,"target":"A"}}"#,
        ])
    }

    // MARK: - unregister

    @Test func unregisterRemovesTargetAndPublishes() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.connect(9)
        d.register("X", from: 2)
        d.subscribe(["mediator.unregistered"], from: 9)
        #expect(d.daemon("unregister", #"{"target":"X"}"#, from: 2) == #"{"id":"d","result":{}}"#.json)
        #expect(d.take(9) == [#"{"event":"mediator.unregistered","data":{"instance":1,"reason":"unregistered","target":"X"}}"#])
        #expect(d.broker.registry.target("X") == nil)
        d.send(#"{"id":1,"target":"X","action":"a"}"#, from: 1)
        #expect(d.take(1) == [errorLine(id: "1", "target_not_found", #"no component serves target "X""#, delivered: false)])
        // Disconnecting later publishes nothing more for X.
        d.disconnect(2)
        #expect(d.take(9).isEmpty)
    }

    @Test func unregisterOfAnotherConnectionsTargetIsForbidden() {
        let d = BrokerDriver()
        d.connect(2)
        d.connect(3)
        d.connect(9)
        d.register("X", from: 2)
        d.subscribe(["*"], from: 9)
        #expect(d.daemon("unregister", #"{"target":"X"}"#, id: "4", from: 3) == errorLine(
            id: "4", "forbidden", #"target "X" was registered by another connection"#, delivered: false).json)
        #expect(d.broker.registry.target("X")?.instances.map(\.connection) == [2])
        #expect(d.take(9).isEmpty)
    }

    @Test func unregisterOfNobodysTargetIsNotFound() {
        let d = BrokerDriver()
        d.connect(2)
        #expect(d.daemon("unregister", #"{"target":"Ghost"}"#, id: "4", from: 2) == errorLine(
            id: "4", "target_not_found", #"no component serves target "Ghost""#, delivered: false).json)
        #expect(errorCode(d.daemon("unregister", #"{"target":"mediator"}"#, from: 2)) == "target_not_found")
        #expect(errorCode(d.daemon("unregister", #"{"target":3}"#, from: 2)) == "bad_request")
        #expect(errorCode(d.daemon("unregister", "{}", from: 2)) == "bad_request")
    }

    @Test func unregisterOnePoolInstanceKeepsTheOthers() {
        let d = BrokerDriver()
        for c in 1...3 { d.connect(c) }
        d.connect(9)
        d.register("P", mode: "pool", from: 2)
        d.register("P", mode: "pool", from: 3)
        d.subscribe(["mediator.unregistered"], from: 9)
        #expect(d.daemon("unregister", #"{"target":"P"}"#, from: 2)?["result"] == .object([:]))
        #expect(d.take(9) == [#"{"event":"mediator.unregistered","data":{"instance":1,"reason":"unregistered","target":"P"}}"#])
        #expect(d.broker.registry.target("P")?.instances.map(\.instance) == [2])
        d.send(#"{"id":1,"target":"P","action":"a"}"#, from: 1)
        #expect(d.take(3).count == 1)
        #expect(d.take(2).isEmpty)
        // Connection 2 may register P again, as a new instance.
        #expect(d.register("P", mode: "pool", from: 2) == 3)
    }

    @Test func disconnectUnregistersEveryTargetWithReasonDisconnected() {
        let d = BrokerDriver()
        d.connect(2)
        d.connect(9)
        d.register("B", from: 2)
        d.register("A", from: 2)
        d.subscribe(["mediator.unregistered"], from: 9)
        d.disconnect(2)
        #expect(d.take(9) == [
            #"{"event":"mediator.unregistered","data":{"instance":2,"reason":"disconnected","target":"A"}}"#,
            #"{"event":"mediator.unregistered","data":{"instance":1,"reason":"disconnected","target":"B"}}"#,
        ])
        #expect(d.broker.registry.targets.isEmpty)
        #expect(d.broker.connectionCount == 1)
        // The name is free again.
        d.connect(3)
        #expect(d.register("A", from: 3) == 3)
    }

    // MARK: - list and describe

    @Test func listIsSortedByteByByte() {
        let d = BrokerDriver()
        d.connect(2)
        for name in ["beta", "alpha", "Zeta", "a_b", "Alpha", "a-b", "a.b", "aB", "a"] {
            d.register(name, actions: "[]", from: 2)
        }
        let answer = d.daemon("list", from: 2)
        let names = answer?["result"]?["targets"]?.arrayValue?.compactMap { $0["target"]?.stringValue }
        #expect(names == ["Alpha", "Zeta", "a", "a-b", "a.b", "aB", "a_b", "alpha", "beta"])
    }

    @Test func listShowsActionsDescriptionAndInstances() {
        let d = BrokerDriver()
        d.connect(2)
        d.connect(3)
        _ = d.daemon("hello", #"{"name":"worker"}"#, from: 2)
        d.register("P", actions: #"["a",{"name":"b","description":"Bee"}]"#, mode: "pool", description: "Pool target", from: 2)
        d.register("P", actions: #"["a",{"name":"b","description":"Bee"}]"#, mode: "pool", from: 3)
        d.register("E", actions: "[]", from: 3)
        let answer = d.daemon("list", from: 3)
        #expect(answer == #"""
            {"id":"d","result":{"targets":[
              {"target":"E","description":"","actions":[],"mode":"exclusive","state":"running","calls_served":0,
               "instances":[{"instance":3,"pid":4103,"uid":1003,"gid":2003,"in_flight":0}]},
              {"target":"P","description":"Pool target","actions":["a","b"],"mode":"pool","state":"running","calls_served":0,
               "instances":[{"instance":1,"pid":4102,"uid":1002,"gid":2002,"in_flight":0,"name":"worker"},
                            {"instance":2,"pid":4103,"uid":1003,"gid":2003,"in_flight":0}]}]}}
            """#.json)
    }

    @Test func listOfNothingIsEmpty() {
        let d = BrokerDriver()
        d.connect(1)
        d.send(#"{"id":1,"target":"mediator","action":"list"}"#, from: 1)
        #expect(d.take(1) == [#"{"id":1,"result":{"targets":[]}}"#])
    }

    @Test func describeGivesFullActionSpecs() {
        let d = BrokerDriver()
        d.connect(2)
        d.register(
            "Detail",
            actions: #"["plain",{"name":"show","description":"Show it","params":{"type":"object","required":["title"]},"url":false}]"#,
            description: "Details", from: 2)
        let answer = d.daemon("describe", #"{"target":"Detail"}"#, from: 2)
        #expect(answer == #"""
            {"id":"d","result":{"target":"Detail","description":"Details","mode":"exclusive","state":"running","calls_served":0,
              "actions":[{"name":"plain"},
                         {"name":"show","description":"Show it","params":{"type":"object","required":["title"]},"url":false}],
              "instances":[{"instance":1,"pid":4102,"uid":1002,"gid":2002,"in_flight":0}]}}
            """#.json)
    }

    @Test func describeMediatorAndUnknown() {
        let d = BrokerDriver()
        d.connect(1)
        let own = d.daemon("describe", #"{"target":"mediator"}"#, from: 1)
        #expect(own?["result"]?["target"] == "mediator")
        let names = own?["result"]?["actions"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        #expect(names == [
            "hello", "register", "unregister", "list", "describe", "open", "subscribe", "unsubscribe", "publish", "cancel", "ping", "status", "start", "stop", "monitor", "stats", "reexec",
        ], "every action the daemon answers, the managed-component and monitor ones included")
        #expect(d.daemon("describe", #"{"target":"Nope"}"#, from: 1) == errorLine(
            id: #""d""#, "target_not_found", #"no component serves target "Nope""#, delivered: false).json)
        #expect(errorCode(d.daemon("describe", "{}", from: 1)) == "bad_request")
    }

    @Test func pingAndUnknownDaemonAction() {
        let d = BrokerDriver()
        d.connect(1)
        d.send(#"{"id":1,"target":"mediator","action":"ping"}"#, from: 1)
        #expect(d.take(1) == [#"{"id":1,"result":{}}"#])
        d.send(#"{"id":2,"target":"mediator","action":"frobnicate","params":{}}"#, from: 1)
        #expect(d.take(1) == [errorLine(id: "2", "action_not_found", #"target "mediator" has no action "frobnicate""#, delivered: false)])
    }

    @Test func daemonRequestsDoNotOccupyTheirId() {
        // A `mediator` request is answered at once, so its id may be reused straight away.
        let d = BrokerDriver()
        d.connect(1)
        for _ in 0..<3 {
            d.send(#"{"id":1,"target":"mediator","action":"ping"}"#, from: 1)
            #expect(d.take(1) == [#"{"id":1,"result":{}}"#])
        }
        #expect(d.broker.inFlight.count == 0)
    }
}

@Suite struct BrokerRegistrationFollowUpTests {
    @Test func poolSpecsCompareRegardlessOfOrder() {
        let d = BrokerDriver()
        d.connect(2)
        d.connect(3)
        #expect(d.register("P", actions: #"["a","b"]"#, mode: "pool", from: 2) == 1)
        #expect(d.register("P", actions: #"["b","a"]"#, mode: "pool", from: 3) == 2)
    }

    @Test func helloAfterRegisterNamesTheInstance() {
        let d = BrokerDriver()
        d.connect(2)
        d.register("Named", actions: #"["a"]"#, from: 2)
        _ = d.daemon("hello", #"{"protocol":1,"name":"late"}"#, from: 2)
        let listed = d.daemon("list", from: 2)
        #expect(listed?["result"]?["targets"]?.arrayValue?.first?["instances"]?.arrayValue?.first?["name"] == "late")
    }

    @Test func openReachesTheDaemonsOwnTarget() {
        let d = BrokerDriver()
        d.connect(2)
        let answer = d.daemon("open", #"{"url":"app://mediator/ping"}"#, from: 2)
        #expect(answer == ["id": "d", "result": .object([:])])
        let described = d.daemon("open", #"{"url":"app://mediator/describe?target=mediator"}"#, from: 2)
        #expect(described?["result"]?["target"] == "mediator")
    }
}

@Suite struct BrokerTestHookTests {
    @Test func blockingTheLoopIsUnknownWithoutTestHooks() {
        let d = BrokerDriver()
        d.connect(2)
        let answer = d.daemon("_block_event_loop", from: 2)
        #expect(answer?["error"]?["code"] == "action_not_found")
        #expect(d.blockRequests == 0)
    }

    @Test func blockingTheLoopIsAskedOfTheHostWithTestHooks() {
        let d = BrokerDriver { $0.testHooks = true }
        d.connect(2)
        _ = d.send(#"{"id":1,"target":"mediator","action":"_block_event_loop"}"#, from: 2)
        #expect(d.blockRequests == 1)
        #expect(d.take(2).isEmpty)
    }
}
