import MediatorProtocol
import Testing

@testable import MediatorDaemon

/// Messages that declare descriptors (contract section 8), while this
/// daemon's host cannot take them: refused out loud, never forwarded
/// without their descriptors.
@Suite("Broker: messages with descriptors")
struct BrokerDescriptorTests {
    /// Component on 1 serves Svc; caller on 2.
    func setUp() -> BrokerDriver {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("Svc", from: 1)
        return d
    }

    @Test func aRequestWithDescriptorsFromAPeerThatDidNotAskIsABadRequest() {
        let d = setUp()
        d.send(#"{"id":7,"target":"Svc","action":"a","params":{"f":{"$fd":0}},"fds":1}"#, from: 2)
        let answer = d.takeOne(2)
        #expect(answer?["id"] == 7)
        #expect(errorCode(answer) == "bad_request")
        #expect(answer?["error"]?["data"]?["delivered"] == false)
        #expect(d.take(1).isEmpty, "not forwarded without its descriptors")
        #expect(d.broker.inFlight.count == 0)
    }

    @Test func helloReadsFdsButGrantsNoMaxFdsAndThenRequestsAreNotSupported() {
        let d = setUp()
        let hello = d.daemon("hello", #"{"protocol":1,"fds":true}"#, from: 2)
        #expect(hello?["result"]?["max_fds"] == nil, "no max_fds: the peer sends none")
        d.send(#"{"id":8,"target":"Svc","action":"a","fds":2}"#, from: 2)
        #expect(errorCode(d.takeOne(2)) == "fds_not_supported")
        #expect(d.take(1).isEmpty)
        // To the daemon's own target as well.
        d.send(#"{"id":9,"target":"mediator","action":"ping","fds":1}"#, from: 2)
        #expect(errorCode(d.takeOne(2)) == "fds_not_supported")
    }

    @Test func helloWithFdsThatIsNoBooleanIsABadRequest() {
        let d = setUp()
        #expect(errorCode(d.daemon("hello", #"{"protocol":1,"fds":"yes"}"#, from: 2)) == "bad_request")
    }

    @Test func aOnewayRequestWithDescriptorsIsDroppedUnanswered() {
        let d = setUp()
        d.send(#"{"target":"Svc","action":"a","fds":1}"#, from: 2)
        #expect(d.take(2).isEmpty)
        #expect(d.take(1).isEmpty)
    }

    @Test func anAnswerWithDescriptorsReachesTheCallerAsFdsNotSupported() {
        let d = setUp()
        d.send(#"{"id":"c1","target":"Svc","action":"a"}"#, from: 2)
        let forwarded = d.takeOne(1)
        let daemonID = forwarded?["id"]?.intValue ?? -1
        d.send(#"{"id":\#(daemonID),"result":{"file":{"$fd":0}},"fds":1}"#, from: 1)
        let answer = d.takeOne(2)
        #expect(answer?["id"] == "c1")
        #expect(errorCode(answer) == "fds_not_supported")
        #expect(answer?["error"]?["data"]?["delivered"] == true, "the component ran it")
        #expect(d.broker.inFlight.count == 0)
        // A second answer to the finished call goes nowhere.
        d.send(#"{"id":\#(daemonID),"result":1}"#, from: 1)
        #expect(d.take(2).isEmpty)
    }

    @Test func aPartialWithDescriptorsEndsTheStreamAndCancelsIt() {
        let d = setUp()
        d.send(#"{"id":1,"target":"Svc","action":"a","more":true}"#, from: 2)
        let daemonID = d.takeOne(1)?["id"]?.intValue ?? -1
        d.send(#"{"id":\#(daemonID),"result":{"$fd":0},"continues":true,"fds":1}"#, from: 1)
        #expect(errorCode(d.takeOne(2)) == "fds_not_supported")
        let cancel = d.takeOne(1)
        #expect(cancel?["event"] == "mediator.cancel")
        #expect(cancel?["data"]?["id"]?.intValue == daemonID)
    }
}
