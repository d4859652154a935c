import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

@Suite("Broker: bad frames")
struct BrokerFrameTests {
    @Test func tooLargeIsFrameTooLargeWithNullID() {
        let d = BrokerDriver { $0.maxFrameBytes = 2048 }
        d.connect(1)
        d.sendTooLarge(from: 1)
        #expect(d.take(1) == [errorLine(id: "null", "frame_too_large", "frame longer than 2048 bytes", delivered: false)])
        #expect(d.closed.isEmpty)
        // The connection stays usable.
        d.send(#"{"id":1,"target":"mediator","action":"ping"}"#, from: 1)
        #expect(d.take(1) == [#"{"id":1,"result":{}}"#])
    }

    /// A frame, and the `id` its `bad_request` answer must carry.
    @Test(arguments: [
        ("hello", "null"),
        ("", "null"),
        ("[1,2]", "null"),
        (#""just a string""#, "null"),
        ("42", "null"),
        ("{}", "null"),
        (#"{"foo":1}"#, "null"),
        (#"{"id":4,"foo":1}"#, "4"),
        (#"{"id":9,"target":"T""#, "9"),
        (#"{"id":"q","target":"T","action":"a",}"#, #""q""#),
        (#"{"id":"q","target":"1x","action":"a"}"#, #""q""#),
        (#"{"id":3,"target":"T","action":"bad name"}"#, "3"),
        (#"{"id":3,"target":"T"}"#, "3"),
        (#"{"id":3,"target":5,"action":"a"}"#, "3"),
        (#"{"id":3,"target":"T","action":"a","params":[1]}"#, "3"),
        (#"{"id":3,"target":"T","action":"a","timeout_ms":0}"#, "3"),
        (#"{"id":3,"target":"T","action":"a","timeout_ms":"5"}"#, "3"),
        (#"{"id":3,"target":"T","action":"a","more":"yes"}"#, "3"),
        // Contract section 8: `fds` is a positive integer (at most 253), never on an event.
        (#"{"id":3,"target":"T","action":"a","fds":0}"#, "3"),
        (#"{"id":3,"target":"T","action":"a","fds":254}"#, "3"),
        (#"{"id":7,"result":1,"fds":"1"}"#, "7"),
        (#"{"event":"e.x","fds":1}"#, "null"),
        (#"{"id":null,"target":"T","action":"a"}"#, "null"),
        (#"{"id":[1],"target":"T","action":"a"}"#, "null"),
        (#"{"id":1.5,"target":"T","action":"a"}"#, "null"),
        (#"{"id":7,"result":1,"error":{"code":"x","message":"y"}}"#, "7"),
        (#"{"id":7,"error":"oops"}"#, "7"),
        (#"{"event":"1bad"}"#, "null"),
        (#"{"id":1} trailing"#, "1"),
        // Contract section 2: a request has both `target` and `action`; an
        // object with only one of them is none of the three kinds, so it is
        // answered, even without an id, not dropped as a oneway call.
        (#"{"target":"T"}"#, "null"),
        (#"{"action":"a"}"#, "null"),
        (#"{"target":"T","params":{}}"#, "null"),
    ])
    func malformedFrameIsBadRequestWithRecoveredID(frame: String, id: String) {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", from: 2)
        d.send(frame, from: 1)
        let answer = d.takeOne(1)
        #expect(answer?["id"] == id.json, "frame \(frame)")
        #expect(errorCode(answer) == "bad_request", "frame \(frame)")
        #expect(answer?["error"]?["message"]?.stringValue?.isEmpty == false)
        #expect(d.take(2).isEmpty)
        #expect(d.broker.inFlight.count == 0)
        #expect(d.closed.isEmpty)
    }

    /// Contract section 2: no `id` means oneway, and a oneway request never
    /// gets a response, not even an error, even when the request is invalid.
    @Test(arguments: [
        #"{"target":"1bad","action":"a"}"#,
        #"{"target":"T","action":"bad name"}"#,
        #"{"target":"T","action":"a","params":[1]}"#,
        #"{"target":"T","action":"a","timeout_ms":-1}"#,
        #"{"target":"T","action":"a","more":1}"#,
    ])
    func invalidOnewayRequestGetsNoAnswerButCountsAsBadFrame(frame: String) {
        let d = BrokerDriver { $0.maxConsecutiveBadFrames = 2 }
        d.connect(1)
        d.connect(2)
        d.register("T", from: 2)
        d.send(frame, from: 1)
        #expect(d.take(1).isEmpty)
        #expect(d.take(2).isEmpty)
        d.send(frame, from: 1)
        #expect(d.closed == [1])
        #expect(d.take(1).isEmpty)
    }

    @Test func requestWithNullIDIsNotOnewayAndIsAnswered() {
        let d = BrokerDriver()
        d.connect(1)
        d.send(#"{"id":null,"target":"1bad","action":"a"}"#, from: 1)
        d.send(#"{"target":"T","action":"a""#, from: 1)  // unreadable: cannot tell it is oneway
        #expect(d.takeJSON(1).map { $0["id"] } == [.null, .null])
    }

    @Test func consecutiveBadFramesCloseTheConnection() {
        let d = BrokerDriver { $0.maxConsecutiveBadFrames = 3 }
        d.connect(1)
        d.connect(2)
        d.send("x", from: 1)
        d.sendTooLarge(from: 1)
        // A good frame resets the count.
        d.send(#"{"target":"mediator","action":"ping"}"#, from: 1)
        d.send("x", from: 1)
        d.send("y", from: 1)
        #expect(d.closed.isEmpty)
        // Another connection's bad frames count separately.
        d.send("z", from: 2)
        d.send("z", from: 2)
        #expect(d.closed.isEmpty)
        let effects = d.sendTooLarge(from: 1)
        #expect(d.closed == [1])
        // The error is still sent, before the close.
        #expect(effects.count == 2)
        if effects.count == 2 {
            if case .send(1, _) = effects[0] {} else { Issue.record("first effect should be the error: \(effects)") }
            if case .close(1) = effects[1] {} else { Issue.record("second effect should be the close: \(effects)") }
        }
        #expect(d.take(1).count == 5)
        d.send("z", from: 2)
        #expect(d.closed == [1, 2])
    }

    @Test func responsesAndEventsResetTheBadFrameCount() {
        let d = BrokerDriver { $0.maxConsecutiveBadFrames = 2 }
        d.connect(1)
        d.send("x", from: 1)
        d.send(#"{"id":5,"result":1}"#, from: 1)  // dropped, but a valid frame
        d.send("x", from: 1)
        d.send(#"{"event":"e"}"#, from: 1)
        d.send("x", from: 1)
        #expect(d.closed.isEmpty)
        d.send("x", from: 1)
        #expect(d.closed == [1])
    }

    @Test func brokerLevelErrorsAreNotBadFrames() {
        let d = BrokerDriver { $0.maxConsecutiveBadFrames = 2 }
        d.connect(1)
        for _ in 0..<5 { d.send(#"{"id":1,"target":"Nobody","action":"a"}"#, from: 1) }
        #expect(d.closed.isEmpty)
        #expect(d.take(1).count == 5)
    }

    @Test func duplicateMembersLastOneWins() {
        // The last of repeated member names wins, in the broker too.
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: #"["a","b"]"#, from: 2)
        d.send(#"{"id":1,"target":"T","action":"a","action":"b","params":{"x":1},"params":{"y":2}}"#, from: 1)
        #expect(d.take(2) == [
            #"{"id":1,"target":"T","action":"b","params":{"y":2},"timeout_ms":30000,"caller":\#(BrokerDriver.callerJSON(1))}"#
        ])
    }
}
