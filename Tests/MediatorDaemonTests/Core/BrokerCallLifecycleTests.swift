import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// Timeouts, `more`/`continues`, cancel, disconnects, wake-ups, shutdown.
@Suite("Broker: call lifecycle")
struct BrokerCallLifecycleTests {
    static func cancelEvent(_ id: Int64) -> JSONValue { #"{"event":"mediator.cancel","data":{"id":\#(id)}}"#.json }

    /// Caller 1, component 2 serving T.
    func setUp(_ configure: (inout DaemonConfiguration) -> Void = { _ in }) -> BrokerDriver {
        let d = BrokerDriver(configure)
        d.connect(1)
        d.connect(2)
        d.register("T", from: 2)
        return d
    }

    // MARK: - Timeouts

    @Test func timeoutAnswersCallerAndCancelsCallee() {
        let d = setUp()
        let effects = d.send(#"{"id":"c1","target":"T","action":"a","timeout_ms":100}"#, from: 1)
        #expect(d.wakeUpEffects(effects) == [d.at(ms: 100)])
        #expect(d.takeOne(2)?["id"] == 1)

        d.advance(ms: 99)
        // Too early (a host timer may fire a little early): nothing expires, the same deadline is re-armed.
        #expect(d.wakeUpEffects(d.expire()) == [d.at(ms: 100)])
        #expect(d.lastEffects.count == 1)
        d.advance(ms: 1)
        let fired = d.expire()
        #expect(d.take(1) == [errorLine(id: #""c1""#, "timeout", #"no response from "T" within 100 ms"#, delivered: true)])
        #expect(d.takeJSON(2) == [Self.cancelEvent(1)])
        #expect(d.wakeUpEffects(fired).isEmpty, "nothing left to wait for")
        #expect(d.broker.inFlight.count == 0)
        #expect(d.broker.registry.target("T")?.instances[0].inFlight == 0)

        // A late response is dropped.
        #expect(d.send(#"{"id":1,"result":"late"}"#, from: 2).isEmpty)
        // The caller's id is free again.
        d.send(#"{"id":"c1","target":"T","action":"a"}"#, from: 1)
        #expect(d.takeOne(2)?["id"] == 2)
    }

    @Test func defaultTimeoutFromConfiguration() {
        let d = setUp { $0.defaultTimeoutMs = 1234 }
        let effects = d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 1)
        #expect(d.wakeUpEffects(effects) == [d.at(ms: 1234)])
        d.advance(ms: 1234)
        d.expire()
        #expect(d.take(1) == [errorLine(id: "1", "timeout", #"no response from "T" within 1234 ms"#, delivered: true)])
    }

    @Test func onlyExpiredCallsTimeOutOldestFirst() {
        let d = setUp()
        d.send(#"{"id":1,"target":"T","action":"a","timeout_ms":300}"#, from: 1)
        d.send(#"{"id":2,"target":"T","action":"a","timeout_ms":100}"#, from: 1)
        d.send(#"{"id":3,"target":"T","action":"a","timeout_ms":100}"#, from: 1)
        d.send(#"{"id":4,"target":"T","action":"a","timeout_ms":200}"#, from: 1)
        _ = d.take(2)
        d.advance(ms: 150)
        let fired = d.expire()
        #expect(d.takeJSON(1).map { $0["id"] } == [2, 3])
        #expect(d.takeJSON(2) == [Self.cancelEvent(2), Self.cancelEvent(3)])
        #expect(d.wakeUpEffects(fired) == [d.at(ms: 200)], "re-armed at the next deadline")
        #expect(d.broker.inFlight.count == 2)
        d.advance(ms: 50)
        #expect(d.wakeUpEffects(d.expire()) == [d.at(ms: 300)])
        #expect(d.takeJSON(1).map { $0["id"] } == [4])
        d.send(#"{"id":1,"result":"in time"}"#, from: 2)
        #expect(d.take(1) == [#"{"id":1,"result":"in time"}"#])
    }

    @Test func wakeUpIsArmedOnlyForAnEarlierDeadline() {
        let d = setUp()
        var armed: [NIODeadline] = []
        armed += d.wakeUpEffects(d.send(#"{"id":1,"target":"T","action":"a","timeout_ms":500}"#, from: 1))
        armed += d.wakeUpEffects(d.send(#"{"id":2,"target":"T","action":"a","timeout_ms":900}"#, from: 1))
        armed += d.wakeUpEffects(d.send(#"{"id":3,"target":"T","action":"a","timeout_ms":200}"#, from: 1))
        armed += d.wakeUpEffects(d.send(#"{"id":4,"target":"T","action":"a","timeout_ms":200}"#, from: 1))
        d.advance(ms: 10)
        armed += d.wakeUpEffects(d.send(#"{"id":5,"target":"T","action":"a","timeout_ms":100}"#, from: 1))
        #expect(armed == [d.at(ms: 500), d.at(ms: 200), d.at(ms: 110)])
        // When it fires, the next earliest deadline is armed.
        d.advance(ms: 100)
        #expect(d.wakeUpEffects(d.expire()) == [d.at(ms: 200)])
        #expect(d.takeJSON(1).map { $0["id"] } == [5])
    }

    @Test func wakeUpRearmedAfterFiringEvenIfLaterThanBefore() {
        let d = setUp()
        #expect(d.wakeUpEffects(d.send(#"{"id":1,"target":"T","action":"a","timeout_ms":100}"#, from: 1)) == [d.at(ms: 100)])
        d.send(#"{"id":1,"result":0}"#, from: 2)
        // The armed wake-up (100) is still pending at the host, so a later one is not asked for...
        #expect(d.wakeUpEffects(d.send(#"{"id":2,"target":"T","action":"a","timeout_ms":500}"#, from: 1)).isEmpty)
        // ...but when it fires with nothing expired, the later one is armed.
        d.advance(ms: 100)
        #expect(d.wakeUpEffects(d.expire()) == [d.at(ms: 500)])
        d.advance(ms: 400)
        d.expire()
        #expect(errorCode(d.takeJSON(1).last) == "timeout")
    }

    @Test func hugeTimeoutDoesNotTrap() {
        let d = setUp()
        let effects = d.send(#"{"id":1,"target":"T","action":"a","timeout_ms":9223372036854775807}"#, from: 1)
        #expect(d.takeOne(2)?["timeout_ms"] == .int(Int64.max))
        #expect(d.wakeUpEffects(effects).count == 1)
        d.advance(ms: 1_000_000_000)
        d.expire()
        #expect(d.take(1).isEmpty)
    }

    // MARK: - more / continues

    @Test func continuesResetsTheDeadline() {
        let d = setUp()
        d.send(#"{"id":"m","target":"T","action":"a","timeout_ms":100,"more":true}"#, from: 1)
        #expect(d.takeOne(2)?["more"] == true)
        d.advance(ms: 80)
        let effects = d.send(#"{"id":1,"result":{"part":1},"continues":true}"#, from: 2)
        #expect(d.take(1) == [#"{"id":"m","result":{"part":1},"continues":true}"#])
        #expect(d.wakeUpEffects(effects).isEmpty, "a later deadline does not replace the armed one")
        #expect(d.broker.inFlight.call(1)?.deadline == d.at(ms: 180))

        // The old deadline passes: nothing expires, the new one is armed.
        d.advance(ms: 20)
        #expect(d.wakeUpEffects(d.expire()) == [d.at(ms: 180)])
        #expect(d.take(1).isEmpty)
        #expect(d.take(2).isEmpty)

        d.advance(ms: 70)
        d.send(#"{"id":1,"result":{"part":2},"continues":true}"#, from: 2)
        d.send(#"{"id":1,"result":{"part":3},"continues":true}"#, from: 2)
        #expect(d.take(1) == [
            #"{"id":"m","result":{"part":2},"continues":true}"#, #"{"id":"m","result":{"part":3},"continues":true}"#,
        ])
        #expect(d.broker.inFlight.call(1)?.deadline == d.at(ms: 270))
        d.advance(ms: 99)
        d.expire()
        #expect(d.take(1).isEmpty)
        d.advance(ms: 1)
        d.expire()
        #expect(d.take(1) == [errorLine(id: #""m""#, "timeout", #"no response from "T" within 100 ms"#, delivered: true)])
        #expect(d.takeJSON(2) == [Self.cancelEvent(1)])
    }

    @Test func finalResponseAfterContinuesEndsTheCall() {
        let d = setUp()
        d.send(#"{"id":1,"target":"T","action":"a","more":true}"#, from: 1)
        d.send(#"{"id":1,"result":1,"continues":true}"#, from: 2)
        d.send(#"{"id":1,"result":2,"continues":false}"#, from: 2)
        d.send(#"{"id":1,"result":3}"#, from: 2)
        #expect(d.take(1) == [#"{"id":1,"result":1,"continues":true}"#, #"{"id":1,"result":2}"#])
        #expect(d.broker.inFlight.count == 0)
    }

    @Test func errorWithContinuesIsFinal() {
        let d = setUp()
        d.send(#"{"id":1,"target":"T","action":"a","more":true}"#, from: 1)
        d.send(#"{"id":1,"error":{"code":"boom","message":"m"},"continues":true}"#, from: 2)
        d.send(#"{"id":1,"result":"after"}"#, from: 2)
        #expect(d.take(1) == [#"{"id":1,"error":{"code":"boom","message":"m"}}"#])
        #expect(d.broker.inFlight.count == 0)
    }

    @Test func continuesWithoutMoreIsDeliveredAsFinal() {
        let d = setUp()
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 1)
        #expect(d.takeOne(2)?["more"] == nil)
        d.send(#"{"id":1,"result":"first","continues":true}"#, from: 2)
        d.send(#"{"id":1,"result":"second"}"#, from: 2)
        #expect(d.take(1) == [#"{"id":1,"result":"first"}"#])
        #expect(d.broker.inFlight.count == 0)
    }

    // MARK: - cancel

    @Test func cancelAnswersCancelledAndTellsTheCallee() {
        let d = setUp()
        d.send(#"{"id":"job","target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":7,"target":"T","action":"a"}"#, from: 1)
        _ = d.take(2)
        d.send(#"{"id":"c","target":"mediator","action":"cancel","params":{"id":"job"}}"#, from: 1)
        #expect(d.take(1) == [
            errorLine(id: #""job""#, "cancelled", "the caller cancelled the call", delivered: true), #"{"id":"c","result":{}}"#,
        ])
        #expect(d.takeJSON(2) == [Self.cancelEvent(1)])
        #expect(d.broker.inFlight.count == 1)
        // A late response to the cancelled call is dropped; the other call is unaffected.
        #expect(d.send(#"{"id":1,"result":"late"}"#, from: 2).isEmpty)
        d.send(#"{"id":"c","target":"mediator","action":"cancel","params":{"id":7.0}}"#, from: 1)
        #expect(d.take(1) == [errorLine(id: "7", "cancelled", "the caller cancelled the call", delivered: true), #"{"id":"c","result":{}}"#])
        #expect(d.takeJSON(2) == [Self.cancelEvent(2)])
        #expect(d.broker.registry.target("T")?.instances[0].inFlight == 0)
    }

    @Test func cancelOfUnknownOrOtherConnectionsIDIsJustEmpty() {
        let d = setUp()
        d.connect(3)
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 1)
        _ = d.take(2)
        d.send(#"{"id":2,"target":"mediator","action":"cancel","params":{"id":99}}"#, from: 1)
        d.send(#"{"id":3,"target":"mediator","action":"cancel","params":{"id":"1"}}"#, from: 1)
        #expect(d.take(1) == [#"{"id":2,"result":{}}"#, #"{"id":3,"result":{}}"#])
        // Connection 3 cannot cancel connection 1's call 1.
        d.send(#"{"id":4,"target":"mediator","action":"cancel","params":{"id":1}}"#, from: 3)
        #expect(d.take(3) == [#"{"id":4,"result":{}}"#])
        #expect(d.take(2).isEmpty)
        #expect(d.broker.inFlight.count == 1)
        // Bad ids.
        #expect(errorCode(d.daemon("cancel", "{}", from: 1)) == "bad_request")
        #expect(errorCode(d.daemon("cancel", #"{"id":null}"#, from: 1)) == "bad_request")
        #expect(errorCode(d.daemon("cancel", #"{"id":[1]}"#, from: 1)) == "bad_request")
    }

    // MARK: - Disconnects

    @Test func calleeDisconnectAnswersEveryCallInFlight() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(3)
        d.connect(2)
        d.connect(4)
        d.connect(9)
        d.register("T", from: 2)
        d.register("U", from: 4)
        d.subscribe(["mediator.*"], from: 9)
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":"x","target":"T","action":"a"}"#, from: 3)
        d.send(#"{"id":2,"target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":3,"target":"U","action":"a"}"#, from: 1)
        #expect(d.broker.inFlight.count == 4)
        let effects = d.disconnect(2)
        let unavailable = #"the component serving "T" disconnected with the call in flight"#
        #expect(d.take(1) == [errorLine(id: "1", "component_unavailable", unavailable, delivered: true), errorLine(id: "2", "component_unavailable", unavailable, delivered: true)])
        #expect(d.take(3) == [errorLine(id: #""x""#, "component_unavailable", unavailable, delivered: true)])
        #expect(d.take(9) == [#"{"event":"mediator.unregistered","data":{"instance":1,"reason":"disconnected","target":"T"}}"#])
        #expect(!effects.contains { if case .send(2, _) = $0 { true } else { false } }, "nothing is sent to the closed connection")
        #expect(d.broker.inFlight.count == 1)
        // The call to U goes on.
        _ = d.take(4)
        d.send(#"{"id":4,"result":"u"}"#, from: 4)
        #expect(d.take(1) == [#"{"id":3,"result":"u"}"#])
        // T is gone.
        d.send(#"{"id":5,"target":"T","action":"a"}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "target_not_found")
    }

    @Test func callerDisconnectCancelsItsCalls() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(3)
        d.connect(2)
        d.connect(4)
        d.register("T", from: 2)
        d.register("U", from: 4)
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":2,"target":"U","action":"a"}"#, from: 1)
        d.send(#"{"id":3,"target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 3)
        d.send(#"{"target":"T","action":"a"}"#, from: 1)
        _ = d.take(2)
        _ = d.take(4)
        d.disconnect(1)
        #expect(d.takeJSON(2) == [Self.cancelEvent(1), Self.cancelEvent(3)])
        #expect(d.takeJSON(4) == [Self.cancelEvent(2)])
        #expect(d.take(3).isEmpty)
        #expect(d.broker.inFlight.count == 1)
        #expect(d.broker.registry.target("T")?.instances[0].inFlight == 1)
        // Late answers to the cancelled calls are dropped; 3's call still works.
        #expect(d.send(#"{"id":1,"result":0}"#, from: 2).isEmpty)
        d.send(#"{"id":4,"result":"for 3"}"#, from: 2)
        #expect(d.take(3) == [#"{"id":1,"result":"for 3"}"#])
        // Inputs for a gone connection do nothing.
        #expect(d.send(#"{"id":9,"target":"T","action":"a"}"#, from: 1).isEmpty)
        #expect(d.disconnect(1).isEmpty)
    }

    // MARK: - Shutdown

    @Test func answerAllPendingAnswersAndCancelsEverything() {
        let d = setUp()
        d.connect(3)
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":"b","target":"T","action":"a"}"#, from: 3)
        _ = d.take(2)
        d.answerAllPending(MediatorError(.componentUnavailable, "mediatord is stopping"))
        #expect(d.take(1) == [errorLine(id: "1", "component_unavailable", "mediatord is stopping", delivered: true)])
        #expect(d.take(3) == [errorLine(id: #""b""#, "component_unavailable", "mediatord is stopping", delivered: true)])
        #expect(d.takeJSON(2) == [Self.cancelEvent(1), Self.cancelEvent(2)])
        #expect(d.broker.inFlight.count == 0)
        #expect(d.answerAllPending(MediatorError(.internal, "x")).isEmpty)
    }
}
