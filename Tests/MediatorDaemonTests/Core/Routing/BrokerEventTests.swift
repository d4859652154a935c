import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

@Suite("Broker: subscribe and publish")
struct BrokerEventTests {
    func publish(_ d: BrokerDriver, _ params: String, from connection: ConnectionID) -> JSONValue? {
        d.daemon("publish", params, from: connection)
    }

    @Test func patternsExactPrefixAndStar() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.connect(3)
        d.connect(4)
        d.connect(5)
        d.subscribe(["user.login"], from: 2)
        d.subscribe(["user.*"], from: 3)
        d.subscribe(["*"], from: 4)
        // 5 subscribes to nothing.
        let cases: [(String, Set<ConnectionID>)] = [
            ("user.login", [2, 3, 4]),
            ("user.a.b", [3, 4]),
            ("user", [4]),
            ("users.x", [4]),
            ("user.logout", [3, 4]),
            ("other", [4]),
        ]
        for (event, receivers) in cases {
            let answer = publish(d, #"{"event":"\#(event)","data":{"n":1}}"#, from: 1)
            #expect(answer == #"{"id":"d","result":{"delivered":\#(receivers.count)}}"#.json, "\(event)")
            for c in 2...5 {
                let lines = d.take(c)
                if receivers.contains(c) {
                    #expect(lines == [#"{"event":"\#(event)","data":{"n":1}}"#], "\(event) to \(c)")
                } else {
                    #expect(lines.isEmpty, "\(event) not to \(c)")
                }
            }
        }
    }

    @Test func oneDeliveryPerConnectionHoweverManyPatternsMatch() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.connect(3)
        d.subscribe(["a.b.c", "a.*", "a.b.*", "*"], from: 2)
        d.subscribe(["a.b.c"], from: 3)
        d.subscribe(["a.b.c"], from: 3)  // twice: still once
        #expect(publish(d, #"{"event":"a.b.c"}"#, from: 1)?["result"] == #"{"delivered":2}"#.json)
        #expect(d.take(2) == [#"{"event":"a.b.c"}"#])
        #expect(d.take(3) == [#"{"event":"a.b.c"}"#])
    }

    @Test func publisherReceivesItsOwnEventWhenSubscribed() {
        let d = BrokerDriver()
        d.connect(1)
        d.subscribe(["e"], from: 1)
        d.send(#"{"id":1,"target":"mediator","action":"publish","params":{"event":"e","data":[1,"x",null]}}"#, from: 1)
        #expect(d.take(1) == [#"{"event":"e","data":[1,"x",null]}"#, #"{"id":1,"result":{"delivered":1}}"#])
    }

    @Test func publishDataNullAndNoSubscribers() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        #expect(publish(d, #"{"event":"e","data":null}"#, from: 1)?["result"] == #"{"delivered":0}"#.json)
        d.subscribe(["e"], from: 2)
        #expect(publish(d, #"{"event":"e","data":null}"#, from: 1)?["result"] == #"{"delivered":1}"#.json)
        #expect(d.take(2) == [#"{"event":"e","data":null}"#])
    }

    @Test func unsubscribeRemovesOnlyThosePatterns() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.subscribe(["a", "b.*"], from: 2)
        #expect(d.daemon("unsubscribe", #"{"events":["a","never"]}"#, from: 2) == #"{"id":"d","result":{}}"#.json)
        #expect(publish(d, #"{"event":"a"}"#, from: 1)?["result"]?["delivered"] == 0)
        #expect(publish(d, #"{"event":"b.x"}"#, from: 1)?["result"]?["delivered"] == 1)
        #expect(d.take(2) == [#"{"event":"b.x"}"#])
        _ = d.daemon("unsubscribe", #"{"events":["b.*"]}"#, from: 2)
        #expect(publish(d, #"{"event":"b.x"}"#, from: 1)?["result"]?["delivered"] == 0)
        #expect(d.take(2).isEmpty)
    }

    @Test(arguments: [
        #"{"events":["user*"]}"#, #"{"events":["*.x"]}"#, #"{"events":["a..*x"]}"#, #"{"events":[""]}"#,
        #"{"events":[1]}"#, #"{"events":"a"}"#, "{}", #"{"events":["ok","bad name"]}"#,
    ])
    func invalidPatternsAreBadRequest(params: String) {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        #expect(errorCode(d.daemon("subscribe", params, from: 2)) == "bad_request")
        // Nothing was added, not even the valid part.
        #expect(publish(d, #"{"event":"ok"}"#, from: 1)?["result"]?["delivered"] == 0)
        #expect(errorCode(d.daemon("unsubscribe", params, from: 2)) == "bad_request")
    }

    @Test func publishOfMediatorEventsIsForbidden() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.subscribe(["*"], from: 2)
        #expect(publish(d, #"{"event":"mediator.registered","data":{}}"#, from: 1) == errorLine(
            id: #""d""#, "forbidden", #"events named "mediator.*" are sent only by the daemon"#, delivered: false).json)
        #expect(errorCode(publish(d, #"{"event":"mediator.cancel","data":{"id":1}}"#, from: 1)) == "forbidden")
        #expect(d.take(2).isEmpty)
        // `mediator` itself (no dot) and `mediatorx.y` are ordinary names.
        #expect(publish(d, #"{"event":"mediator"}"#, from: 1)?["result"]?["delivered"] == 1)
        #expect(publish(d, #"{"event":"mediatorx.y"}"#, from: 1)?["result"]?["delivered"] == 1)
        #expect(d.take(2) == [#"{"event":"mediator"}"#, #"{"event":"mediatorx.y"}"#])
        // Bad names.
        #expect(errorCode(publish(d, #"{"event":"1x"}"#, from: 1)) == "bad_request")
        #expect(errorCode(publish(d, #"{"data":1}"#, from: 1)) == "bad_request")
        #expect(errorCode(publish(d, #"{"event":"a.*"}"#, from: 1)) == "bad_request")
    }

    @Test func bareEventFromPeerIsPublishedWithDataBytesUnchanged() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.connect(3)
        d.subscribe(["user.*"], from: 2)
        d.subscribe(["*"], from: 1)
        let effects = d.send(#"{"event":"user.login","data":{ "who" : "ann" ,"n":1.50}}"#, from: 1)
        #expect(d.take(2) == [#"{"event":"user.login","data":{ "who" : "ann" ,"n":1.50}}"#])
        #expect(d.take(1) == [#"{"event":"user.login","data":{ "who" : "ann" ,"n":1.50}}"#], "no answer, only its own event")
        #expect(effects.count == 2)
        // Without data; with an id member it is still an event, and no answer.
        d.send(#"{"event":"user.logout","id":3}"#, from: 3)
        #expect(d.take(2) == [#"{"event":"user.logout"}"#])
        #expect(d.take(3).isEmpty)
    }

    @Test func bareMediatorEventFromPeerIsDropped() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.subscribe(["*"], from: 2)
        #expect(d.send(#"{"event":"mediator.cancel","data":{"id":1}}"#, from: 1).isEmpty)
        #expect(d.send(#"{"event":"mediator.registered","data":{}}"#, from: 1).isEmpty)
        #expect(d.take(1).isEmpty)
        #expect(d.take(2).isEmpty)
    }

    @Test func daemonEventsGoOnlyToSubscribers() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.connect(3)
        d.subscribe(["mediator.registered"], from: 1)
        d.subscribe(["mediator.unregistered"], from: 3)
        d.register("T", from: 2)
        #expect(d.take(1) == [#"{"event":"mediator.registered","data":{"instance":1,"pid":4102,"target":"T"}}"#])
        #expect(d.take(3).isEmpty)
        d.disconnect(2)
        #expect(d.take(1).isEmpty)
        #expect(d.take(3) == [#"{"event":"mediator.unregistered","data":{"instance":1,"reason":"disconnected","target":"T"}}"#])
    }

    @Test func subscriptionsEndWithTheConnection() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.subscribe(["*"], from: 2)
        d.disconnect(2)
        #expect(publish(d, #"{"event":"e"}"#, from: 1)?["result"]?["delivered"] == 0)
        #expect(d.take(2).isEmpty)
    }

    @Test func mediatorCancelEventGoesOnlyToTheCalleeNotToSubscribers() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.connect(9)
        d.register("T", from: 2)
        d.subscribe(["*"], from: 9)
        d.send(#"{"id":1,"target":"T","action":"a","timeout_ms":5}"#, from: 1)
        d.advance(ms: 5)
        d.expire()
        #expect(d.takeJSON(2).last == #"{"event":"mediator.cancel","data":{"id":1}}"#.json)
        #expect(d.take(9).isEmpty)
    }
}
