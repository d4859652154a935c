import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// Connection 1 is the caller, 2 (and 3, 4) components, 9 an observer.
@Suite("Broker: routing calls and responses")
struct BrokerRoutingTests {
    let caller1 = BrokerDriver.callerJSON(1)

    @Test func forwardedRequestHasDaemonIDExactParamsTimeoutAndCaller() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("Detail", actions: #"["show"]"#, from: 2)
        // Odd whitespace, key order and escapes inside params must pass unchanged,
        // and a caller-sent `caller` must not survive.
        d.send(
            #"{ "caller" : {"pid":1,"uid":0,"gid":0,"name":"root"}, "id":"req-1","target":"Detail","action":"show","params":{ "z" : [1,  2.50 ] ,"a":"\u0041\n" , "nested":{"b":null,"a":true}}  ,"timeout_ms":5000}"#,
            from: 1)
        #expect(d.take(2) == [
            #"{"id":1,"target":"Detail","action":"show","params":{ "z" : [1,  2.50 ] ,"a":"\u0041\n" , "nested":{"b":null,"a":true}},"timeout_ms":5000,"caller":{"gid":2001,"pid":4101,"uid":1001}}"#
        ])
        #expect(d.take(1).isEmpty)
        #expect(d.broker.callsRouted == 1)
        #expect(d.broker.inFlight.count == 1)
    }

    @Test func callerMemberAfterTheOtherMembersCannotOverrideEither() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", from: 2)
        d.send(#"{"id":1,"target":"T","action":"a","caller":{"pid":0,"uid":0,"gid":0}}"#, from: 1)
        let forwarded = d.takeOne(2)
        #expect(forwarded?["caller"] == caller1.json)
        #expect(forwarded?["id"] == 1)
    }

    @Test func daemonIDsAreTheDaemonsOwnAcrossCallers() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(3)
        d.connect(2)
        d.register("T", from: 2)
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 3)
        d.send(#"{"id":"x","target":"T","action":"a"}"#, from: 1)
        #expect(d.takeJSON(2).map { $0["id"] } == [1, 2, 3])
    }

    @Test func defaultTimeoutAndMoreFlag() {
        let d = BrokerDriver { $0.defaultTimeoutMs = 2500 }
        d.connect(1)
        d.connect(2)
        d.register("T", from: 2)
        d.send(#"{"id":1,"target":"T","action":"a","more":true}"#, from: 1)
        d.send(#"{"id":2,"target":"T","action":"a","more":false,"timeout_ms":10}"#, from: 1)
        #expect(d.take(2) == [
            #"{"id":1,"target":"T","action":"a","params":{},"timeout_ms":2500,"more":true,"caller":\#(caller1)}"#,
            #"{"id":2,"target":"T","action":"a","params":{},"timeout_ms":10,"caller":\#(caller1)}"#,
        ])
    }

    @Test func responseGoesBackUnderCallersIDByteExact() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", from: 2)
        d.send(#"{"id":"abc\"d","target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":42,"target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":-7,"target":"T","action":"a"}"#, from: 1)
        #expect(d.takeJSON(2).map { $0["id"] } == [1, 2, 3])

        d.send(#"{ "result" : { "x" :1, "a":[ ] } , "id" : 1 }"#, from: 2)
        d.send(#"{"id":2,"result":null}"#, from: 2)
        d.send(#"{"id":3,"error":{"message":"nope","code":"my_code","data":{ "k":1 }}}"#, from: 2)
        #expect(d.take(1) == [
            #"{"id":"abc\"d","result":{ "x" :1, "a":[ ] }}"#,
            #"{"id":42,"result":null}"#,
            #"{"id":-7,"error":{"message":"nope","code":"my_code","data":{ "k":1 }}}"#,
        ])
        #expect(d.take(2).isEmpty)
        #expect(d.broker.inFlight.count == 0)
        #expect(d.broker.registry.target("T")?.instances[0].inFlight == 0)
    }

    @Test func outOfOrderResponses() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", from: 2)
        for id in ["10", #""b""#, "30"] { d.send(#"{"id":\#(id),"target":"T","action":"a"}"#, from: 1) }
        #expect(d.takeJSON(2).map { $0["id"] } == [1, 2, 3])
        d.send(#"{"id":3,"result":"third"}"#, from: 2)
        d.send(#"{"id":1,"result":"first"}"#, from: 2)
        d.send(#"{"id":2,"result":"second"}"#, from: 2)
        #expect(d.take(1) == [#"{"id":30,"result":"third"}"#, #"{"id":10,"result":"first"}"#, #"{"id":"b","result":"second"}"#])
    }

    @Test func responseFromAConnectionNotSentThatIDIsDropped() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.connect(3)
        d.register("X", from: 2)
        d.register("Y", from: 3)
        d.send(#"{"id":5,"target":"X","action":"a"}"#, from: 1)
        #expect(d.takeOne(2)?["id"] == 1)
        // Y (and the caller itself) answer daemon id 1: dropped.
        #expect(d.send(#"{"id":1,"result":"forged"}"#, from: 3).isEmpty)
        #expect(d.send(#"{"id":1,"result":"forged"}"#, from: 1).isEmpty)
        // Unknown ids, string ids and null ids: dropped.
        #expect(d.send(#"{"id":99,"result":1}"#, from: 2).isEmpty)
        #expect(d.send(#"{"id":"1","result":1}"#, from: 2).isEmpty)
        #expect(d.send(#"{"id":null,"error":{"code":"x","message":"y"}}"#, from: 2).isEmpty)
        #expect(d.broker.inFlight.count == 1)
        d.send(#"{"id":1,"result":"real"}"#, from: 2)
        #expect(d.take(1) == [#"{"id":5,"result":"real"}"#])
        // Answered once only.
        #expect(d.send(#"{"id":1,"result":"again"}"#, from: 2).isEmpty)
    }

    @Test func callerCanReuseIDAfterAnswer() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", from: 2)
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":1,"result":1}"#, from: 2)
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 1)
        #expect(d.take(1) == [#"{"id":1,"result":1}"#])
        #expect(d.takeJSON(2).map { $0["id"] } == [1, 2])
    }

    // MARK: - Pools

    @Test func poolPicksFewestInFlightThenRoundRobin() {
        let d = BrokerDriver()
        d.connect(1)
        for c in 2...4 { d.connect(c) }
        for c in 2...4 { d.register("P", mode: "pool", from: c) }
        func callee(_ id: Int) -> ConnectionID? {
            d.send(#"{"id":\#(id),"target":"P","action":"a"}"#, from: 1)
            let receivers = (2...4).filter { !d.peek($0).isEmpty }
            for c in 2...4 { _ = d.take(c) }
            return receivers.count == 1 ? receivers[0] : nil
        }
        #expect(callee(1) == 2)  // all 0: in turn
        #expect(callee(2) == 3)
        #expect(callee(3) == 4)
        // Connection 3 answers its call (daemon id 2): it has the fewest.
        d.send(#"{"id":2,"result":1}"#, from: 3)
        _ = d.take(1)
        #expect(callee(4) == 3)
        // All have one again: the turn goes on after 3.
        #expect(callee(5) == 4)
        #expect(callee(6) == 2)
        #expect(d.broker.registry.target("P")?.instances.map(\.inFlight) == [2, 1, 2])
    }

    @Test func poolTiesRotateForOnewayCalls() {
        let d = BrokerDriver()
        d.connect(1)
        for c in 2...3 { d.connect(c) }
        for c in 2...3 { d.register("P", mode: "pool", from: c) }
        var order: [ConnectionID] = []
        for _ in 0..<5 {
            d.send(#"{"target":"P","action":"a"}"#, from: 1)
            for c in 2...3 where !d.take(c).isEmpty { order.append(c) }
        }
        #expect(order == [2, 3, 2, 3, 2])
        #expect(d.broker.inFlight.count == 0)
    }

    @Test func poolAvoidsTheBusyInstance() {
        let d = BrokerDriver()
        d.connect(1)
        for c in 2...3 { d.connect(c) }
        for c in 2...3 { d.register("P", mode: "pool", from: c) }
        // Two calls: one each. Then 3 answers; the next three calls: 3, then tie (3 has 1, 2 has 1) ...
        d.send(#"{"id":1,"target":"P","action":"a"}"#, from: 1)
        d.send(#"{"id":2,"target":"P","action":"a"}"#, from: 1)
        #expect(d.take(2).count == 1)
        #expect(d.take(3).count == 1)
        d.send(#"{"id":2,"result":1}"#, from: 3)
        d.send(#"{"id":3,"target":"P","action":"a"}"#, from: 1)
        #expect(d.take(2).isEmpty)
        #expect(d.takeOne(3)?["id"] == 3)
    }

    // MARK: - notFound, action_not_found, target_not_found

    @Test func notFoundGetsActionAndOriginalParams() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: #"["known","notFound"]"#, from: 2)
        d.send(#"{"id":1,"target":"T","action":"missing.one","params":{ "k" : [1 ,2] }}"#, from: 1)
        d.send(#"{"id":2,"target":"T","action":"other"}"#, from: 1)
        d.send(#"{"id":3,"target":"T","action":"known","params":{"k":1}}"#, from: 1)
        #expect(d.take(2) == [
            #"{"id":1,"target":"T","action":"notFound","params":{"action":"missing.one","params":{ "k" : [1 ,2] }},"timeout_ms":30000,"caller":\#(caller1)}"#,
            #"{"id":2,"target":"T","action":"notFound","params":{"action":"other","params":{}},"timeout_ms":30000,"caller":\#(caller1)}"#,
            #"{"id":3,"target":"T","action":"known","params":{"k":1},"timeout_ms":30000,"caller":\#(caller1)}"#,
        ])
        d.send(#"{"id":1,"result":"handled"}"#, from: 2)
        #expect(d.take(1) == [#"{"id":1,"result":"handled"}"#])
    }

    @Test func actionNotFoundAndTargetNotFound() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: #"["known"]"#, from: 2)
        d.send(#"{"id":1,"target":"T","action":"nope"}"#, from: 1)
        d.send(#"{"id":2,"target":"Missing","action":"known"}"#, from: 1)
        #expect(d.take(1) == [
            errorLine(id: "1", "action_not_found", #"target "T" has no action "nope""#, delivered: false),
            errorLine(id: "2", "target_not_found", #"no component serves target "Missing""#, delivered: false),
        ])
        #expect(d.take(2).isEmpty)
        #expect(d.broker.inFlight.count == 0)
    }

    // MARK: - Schemas

    static let showSpec = #"[{"name":"show","params":{"type":"object","properties":{"title":{"type":"string"},"n":{"type":"integer"}},"required":["title"],"additionalProperties":false}}]"#

    @Test func schemaMismatchIsInvalidParamsWithoutForwarding() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: Self.showSpec, from: 2)
        d.send(#"{"id":1,"target":"T","action":"show","params":{"title":3}}"#, from: 1)
        d.send(#"{"id":2,"target":"T","action":"show"}"#, from: 1)
        d.send(#"{"id":3,"target":"T","action":"show","params":{"title":"x","extra":1}}"#, from: 1)
        d.send(#"{"id":4,"target":"T","action":"show","params":{"title":"x","n":1.5}}"#, from: 1)
        let answers = d.takeJSON(1)
        #expect(answers.map { $0["id"] } == [1, 2, 3, 4])
        #expect(answers.map(errorCode) == Array(repeating: "invalid_params", count: 4))
        let messages = answers.compactMap { $0["error"]?["message"]?.stringValue }
        #expect(messages.count == 4)
        if messages.count == 4 {
            #expect(messages[0].contains("params.title"))
            #expect(messages[1].contains("title"))
            #expect(messages[2].contains("extra"))
            #expect(messages[3].contains("params.n"))
        }
        #expect(d.take(2).isEmpty)
        #expect(d.broker.inFlight.count == 0)
        #expect(d.broker.callsRouted == 0)
    }

    @Test func schemaMatchIsForwardedUnchanged() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: Self.showSpec, from: 2)
        d.send(#"{"id":1,"target":"T","action":"show","params":{"n":2.0 , "title":"x"}}"#, from: 1)
        #expect(d.take(2) == [
            #"{"id":1,"target":"T","action":"show","params":{"n":2.0 , "title":"x"},"timeout_ms":30000,"caller":\#(caller1)}"#
        ])
    }

    // MARK: - open

    static let openActions = #"["show",{"name":"hidden","url":false},"nativeCall",{"name":"visible","url":true}]"#

    @Test func openRoutesWithQueryItemsAsStrings() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("Detail", actions: Self.openActions, from: 2)
        d.send(
            #"{"id":"o1","target":"mediator","action":"open","params":{"url":"App://Detail/show?title=Hi%20there&n=5&n=6&plus=a+b&flag&empty="},"timeout_ms":700}"#,
            from: 1)
        #expect(d.take(1).isEmpty)
        #expect(d.take(2) == [
            #"{"id":1,"target":"Detail","action":"show","params":{"empty":"","flag":"","n":"6","plus":"a+b","title":"Hi there"},"timeout_ms":700,"caller":\#(caller1)}"#
        ])
        d.send(#"{"id":1,"result":{"shown":true}}"#, from: 2)
        #expect(d.take(1) == [#"{"id":"o1","result":{"shown":true}}"#])
    }

    @Test func openRespectsURLReachability() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("Detail", actions: Self.openActions, from: 2)
        func open(_ url: String) -> JSONValue? { d.daemon("open", #"{"url":"\#(url)"}"#, id: "3", from: 1) }
        #expect(open("app://Detail/hidden") == errorLine(
            id: "3", "forbidden", #"action "Detail/hidden" cannot be reached through a URL"#, delivered: false).json)
        #expect(errorCode(open("app://Detail/nativeCall?x=1")) == "forbidden")
        #expect(errorCode(open("app://Detail/nope")) == "action_not_found")
        #expect(errorCode(open("app://Nobody/show")) == "target_not_found")
        #expect(errorCode(open("not a url")) == "bad_request")
        #expect(errorCode(d.daemon("open", #"{"url":5}"#, from: 1)) == "bad_request")
        #expect(errorCode(d.daemon("open", "{}", from: 1)) == "bad_request")
        #expect(d.take(2).isEmpty)
        // The same actions are callable directly.
        d.send(#"{"id":4,"target":"Detail","action":"hidden"}"#, from: 1)
        d.send(#"{"id":5,"target":"Detail","action":"nativeCall"}"#, from: 1)
        #expect(d.takeJSON(2).map { $0["action"] } == ["hidden", "nativeCall"])
        // `"url": true` is reachable.
        d.send(#"{"id":6,"target":"mediator","action":"open","params":{"url":"app://Detail/visible"}}"#, from: 1)
        #expect(d.take(1).isEmpty)
        #expect(d.takeOne(2)?["action"] == "visible")
    }

    @Test func openThroughNotFound() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: #"["notFound"]"#, from: 2)
        d.send(#"{"id":1,"target":"mediator","action":"open","params":{"url":"x://T/whatever?a=1"}}"#, from: 1)
        #expect(d.take(2) == [
            #"{"id":1,"target":"T","action":"notFound","params":{"action":"whatever","params":{"a":"1"}},"timeout_ms":30000,"caller":\#(caller1)}"#
        ])
        // A `native` action is not reachable by URL even through notFound.
        d.send(#"{"id":2,"target":"mediator","action":"open","params":{"url":"x://T/nativeX"}}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "forbidden")
        #expect(d.take(2).isEmpty)
    }

    @Test func openNotFoundWithURLFalseIsForbidden() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: #"[{"name":"notFound","url":false}]"#, from: 2)
        d.send(#"{"id":1,"target":"mediator","action":"open","params":{"url":"x://T/whatever"}}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "forbidden")
        #expect(d.take(2).isEmpty)
    }

    @Test func openCallIsCancellableAndCountsAsInFlightUnderItsID() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("Detail", actions: Self.openActions, from: 2)
        d.send(#"{"id":8,"target":"mediator","action":"open","params":{"url":"app://Detail/show"}}"#, from: 1)
        _ = d.take(2)
        d.send(#"{"id":8,"target":"mediator","action":"open","params":{"url":"app://Detail/show"}}"#, from: 1)
        #expect(d.take(1) == [errorLine(id: "null", "bad_request", "id 8 is already in flight on this connection", delivered: false)])
        d.send(#"{"id":9,"target":"mediator","action":"cancel","params":{"id":8}}"#, from: 1)
        #expect(d.take(1) == [errorLine(id: "8", "cancelled", "the caller cancelled the call", delivered: true), #"{"id":9,"result":{}}"#])
        #expect(d.takeJSON(2) == [#"{"event":"mediator.cancel","data":{"id":1}}"#.json])
    }

    // MARK: - Oneway

    @Test func onewayCallIsForwardedWithoutIDAndNotTracked() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", from: 2)
        let effects = d.send(#"{"target":"T","action":"a","params":{"x":1},"timeout_ms":50}"#, from: 1)
        #expect(d.take(2) == [#"{"target":"T","action":"a","params":{"x":1},"timeout_ms":50,"caller":\#(caller1)}"#])
        #expect(d.wakeUpEffects(effects).isEmpty)
        #expect(d.broker.inFlight.count == 0)
        #expect(d.broker.callsRouted == 1)
        // A response the component sends anyway goes nowhere.
        #expect(d.send(#"{"id":1,"result":1}"#, from: 2).isEmpty)
    }

    @Test func onewayGetsNoResponseEvenOnError() {
        let d = BrokerDriver { $0.maxCallsInFlightPerConnection = 1 }
        d.connect(1)
        d.connect(2)
        d.register("T", actions: #"[{"name":"s","params":{"type":"object","required":["x"]}},{"name":"h","url":false}]"#, from: 2)
        let lines = [
            #"{"target":"Nobody","action":"a"}"#,
            #"{"target":"T","action":"missing"}"#,
            #"{"target":"T","action":"s","params":{}}"#,
            #"{"target":"mediator","action":"ping"}"#,
            #"{"target":"mediator","action":"nope"}"#,
            #"{"target":"mediator","action":"register","params":{"target":"mediator","actions":[]}}"#,
            #"{"target":"mediator","action":"register","params":{"target":"T","actions":[]}}"#,
            #"{"target":"mediator","action":"unregister","params":{"target":"T"}}"#,
            #"{"target":"mediator","action":"hello","params":{"protocol":9}}"#,
            #"{"target":"mediator","action":"open","params":{"url":"x://T/h"}}"#,
            #"{"target":"mediator","action":"open","params":{"url":"bad"}}"#,
            #"{"target":"mediator","action":"publish","params":{"event":"mediator.x"}}"#,
            #"{"target":"mediator","action":"cancel","params":{"id":1}}"#,
        ]
        for line in lines { d.send(line, from: 1) }
        #expect(d.take(1).isEmpty)
        #expect(d.take(2).isEmpty)
        // Oneway calls do not count against the in-flight limit.
        d.send(#"{"id":1,"target":"T","action":"h"}"#, from: 1)
        d.send(#"{"target":"T","action":"h"}"#, from: 1)
        #expect(d.take(1).isEmpty)
        #expect(d.take(2).count == 2)
    }

    @Test func onewayOpenIsRoutedWithoutID() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: #"["show"]"#, from: 2)
        d.send(#"{"target":"mediator","action":"open","params":{"url":"x://T/show?a=b"}}"#, from: 1)
        #expect(d.take(2) == [#"{"target":"T","action":"show","params":{"a":"b"},"timeout_ms":30000,"caller":\#(caller1)}"#])
        #expect(d.take(1).isEmpty)
        #expect(d.broker.inFlight.count == 0)
    }

    // MARK: - Duplicate ids and limits

    @Test func duplicateIDInFlightIsBadRequestWithNullID() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(3)
        d.connect(2)
        d.register("T", from: 2)
        d.send(#"{"id":5,"target":"T","action":"a"}"#, from: 1)
        _ = d.take(2)
        d.send(#"{"id":5,"target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":5.0,"target":"Nobody","action":"a"}"#, from: 1)
        #expect(d.take(1) == [
            errorLine(id: "null", "bad_request", "id 5 is already in flight on this connection", delivered: false),
            errorLine(id: "null", "bad_request", "id 5 is already in flight on this connection", delivered: false),
        ])
        #expect(d.take(2).isEmpty)
        // A string "5" is another id; another connection's 5 too.
        d.send(#"{"id":"5","target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":5,"target":"T","action":"a"}"#, from: 3)
        #expect(d.take(2).count == 2)
        #expect(d.take(1).isEmpty)
        #expect(d.take(3).isEmpty)
        // The first call is still answered normally.
        d.send(#"{"id":1,"result":"one"}"#, from: 2)
        #expect(d.take(1) == [#"{"id":5,"result":"one"}"#])
    }

    @Test func callsInFlightLimitIsOverloaded() {
        let d = BrokerDriver { $0.maxCallsInFlightPerConnection = 2 }
        d.connect(1)
        d.connect(3)
        d.connect(2)
        d.register("T", from: 2)
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":2,"target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":3,"target":"T","action":"a"}"#, from: 1)
        #expect(d.take(1) == [
            errorLine(id: "3", "overloaded", "this connection has 2 calls in flight, the limit", delivered: false)
        ])
        #expect(d.takeJSON(2).map { $0["id"] } == [1, 2])
        // The limit is per connection.
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 3)
        #expect(d.take(2).count == 1)
        // Daemon actions are not calls in flight.
        d.send(#"{"id":4,"target":"mediator","action":"ping"}"#, from: 1)
        #expect(d.take(1) == [#"{"id":4,"result":{}}"#])
        // After an answer there is room again.
        d.send(#"{"id":1,"result":1}"#, from: 2)
        d.send(#"{"id":3,"target":"T","action":"a"}"#, from: 1)
        #expect(d.take(1) == [#"{"id":1,"result":1}"#])
        #expect(d.takeOne(2)?["id"] == 4)
    }

    @Test func componentCanCallAnotherTargetOnTheSameConnection() {
        let d = BrokerDriver()
        d.connect(2)
        d.connect(3)
        d.register("A", from: 2)
        d.register("B", from: 3)
        // 2 calls B with its own id 1, then receives a call for A with daemon id 2.
        d.send(#"{"id":1,"target":"B","action":"a"}"#, from: 2)
        d.send(#"{"id":1,"target":"A","action":"a"}"#, from: 3)
        #expect(d.takeOne(3)?["id"] == 1)
        #expect(d.takeOne(2)?["id"] == 2)
        // 2 answers A's call (daemon id 2) and B answers 2's call (daemon id 1).
        d.send(#"{"id":2,"result":"from A"}"#, from: 2)
        d.send(#"{"id":1,"result":"from B"}"#, from: 3)
        #expect(d.take(3) == [#"{"id":1,"result":"from A"}"#])
        #expect(d.take(2) == [#"{"id":1,"result":"from B"}"#])
    }

    @Test func componentCallingItself() {
        let d = BrokerDriver()
        d.connect(2)
        d.register("A", from: 2)
        d.send(#"{"id":"self","target":"A","action":"a"}"#, from: 2)
        #expect(d.takeOne(2)?["id"] == 1)
        d.send(#"{"id":1,"result":true}"#, from: 2)
        #expect(d.take(2) == [#"{"id":"self","result":true}"#])
        // And disconnecting with a self-call in flight sends nothing to the closed connection.
        d.send(#"{"id":"self2","target":"A","action":"a"}"#, from: 2)
        _ = d.take(2)
        let effects = d.disconnect(2)
        #expect(effects.isEmpty)
        #expect(d.broker.inFlight.count == 0)
    }
}
