import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// After a crash's connections are adopted, calls to targets not registered
/// again yet wait for them (up to `reregister_hold_ms`) instead of failing.
@Suite("Broker: the re-registration hold after a crash")
struct ReregistrationHoldTests {
    /// Caller 1 and component 2 adopted after a crash: both told to register again.
    func crashed(_ configure: (inout DaemonConfiguration) -> Void = { _ in }) -> BrokerDriver {
        let d = BrokerDriver(configure)
        d.connect(1)
        d.connect(2)
        d.apply(d.broker.announceReregister(reason: Broker.crashReason, now: d.now))
        for connection: ConnectionID in [1, 2] {
            #expect(d.takeJSON(connection) == [#"{"event":"mediator.reregister","data":{"reason":"crash"}}"#.json])
        }
        return d
    }

    /// Registers `target` on `connection` and returns what else reached it
    /// (the held calls forwarded right after the answer).
    func registerAgain(_ d: BrokerDriver, _ target: String, actions: String = #"["a"]"#, from connection: ConnectionID) -> [JSONValue] {
        d.send(#"{"id":"reg","target":"mediator","action":"register","params":{"target":"\#(target)","actions":\#(actions)}}"#, from: connection)
        let lines = d.takeJSON(connection)
        #expect(lines.first?["result"]?["target"] == .string(target))
        return Array(lines.dropFirst())
    }

    @Test func aCallWaitsForItsTargetToRegisterAgain() {
        let d = crashed()
        d.advance(ms: 200)
        d.send(#"{"id":"c1","target":"T","action":"a","params":{"x":1}}"#, from: 1)
        #expect(d.take(1).isEmpty, "held, not refused")
        #expect(d.broker.hasHeldCalls)
        #expect(d.broker.callsInFlight(of: 1) == 1)

        d.advance(ms: 100)
        let forwarded = registerAgain(d, "T", from: 2).first
        #expect(forwarded?["target"] == "T")
        #expect(forwarded?["params"] == ["x": 1])
        let daemonID = forwarded?["id"]?.intValue ?? -1
        d.send(#"{"id":\#(daemonID),"result":"ok"}"#, from: 2)
        #expect(d.takeJSON(1) == [#"{"id":"c1","result":"ok"}"#.json])
        #expect(!d.broker.hasHeldCalls)
    }

    @Test func heldCallsGoOutInArrivalOrderToTheirOwnTarget() {
        let d = crashed()
        d.connect(3)
        d.send(#"{"id":1,"target":"T","action":"a","params":{"n":1}}"#, from: 1)
        d.send(#"{"id":2,"target":"U","action":"a","params":{"n":2}}"#, from: 1)
        d.send(#"{"id":3,"target":"T","action":"a","params":{"n":3}}"#, from: 1)
        #expect(d.take(1).isEmpty)
        #expect(registerAgain(d, "U", from: 3).map { $0["params"]?["n"] } == [2])
        #expect(registerAgain(d, "T", from: 2).map { $0["params"]?["n"] } == [1, 3])
    }

    @Test func theWindowsEndAnswersTargetNotFound() {
        let d = crashed { $0.reregisterHoldMs = 500 }
        let effects = d.send(#"{"id":"c1","target":"Gone","action":"a"}"#, from: 1)
        #expect(d.wakeUpEffects(effects).contains(d.at(ms: 500)) || d.broker.armedWakeUp == d.at(ms: 500))
        d.advance(ms: 499)
        d.expire()
        #expect(d.take(1).isEmpty)
        d.advance(ms: 1)
        d.expire()
        let answer = d.takeOne(1)
        #expect(errorCode(answer) == "target_not_found")
        #expect(answer?["id"] == "c1")
        #expect(!d.broker.hasHeldCalls)

        // The window is closed: a call to an unknown target fails at once again.
        d.send(#"{"id":"c2","target":"Gone","action":"a"}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "target_not_found")
    }

    @Test func aHeldCallsOwnTimeoutComesFirst() {
        let d = crashed()
        d.send(#"{"id":"c1","target":"T","action":"a","timeout_ms":100}"#, from: 1)
        d.advance(ms: 100)
        d.expire()
        let answer = d.takeOne(1)
        #expect(errorCode(answer) == "timeout")
        #expect(registerAgain(d, "T", from: 2).isEmpty, "a call answered is not forwarded later")
    }

    @Test func withoutACrashUnknownTargetsFailAtOnce() {
        let d = BrokerDriver()
        d.connect(1)
        d.send(#"{"id":"c1","target":"T","action":"a"}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "target_not_found")
    }

    @Test func aKnownTargetIsRoutedAtOnceDuringTheWindow() {
        let d = crashed()
        d.register("T", from: 2)
        d.send(#"{"id":"c1","target":"T","action":"a"}"#, from: 1)
        #expect(d.takeOne(2)?["target"] == "T")
        // An unknown action of a known target is still refused at once.
        d.send(#"{"id":"c2","target":"T","action":"nope"}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "action_not_found")
    }

    @Test func cancelAnswersAHeldCall() {
        let d = crashed()
        d.send(#"{"id":"c1","target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":"d","target":"mediator","action":"cancel","params":{"id":"c1"}}"#, from: 1)
        let lines = d.takeJSON(1)
        #expect(lines.count == 2)
        #expect(errorCode(lines.first) == "cancelled")
        #expect(lines.first?["id"] == "c1")
        #expect(lines.last?["result"] == [:])
        #expect(registerAgain(d, "T", from: 2).isEmpty)
    }

    @Test func aDuplicateIdOfAHeldCallIsRefused() {
        let d = crashed()
        d.send(#"{"id":"c1","target":"T","action":"a"}"#, from: 1)
        d.send(#"{"id":"c1","target":"T","action":"a"}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "bad_request")
        #expect(registerAgain(d, "T", from: 2).count == 1)
    }

    @Test func aCallerThatLeavesTakesItsHeldCallsAndDescriptorsWithIt() {
        let d = crashed()
        d.broker.passesDescriptors = true
        _ = d.daemon("hello", #"{"protocol":1,"fds":true}"#, from: 1)
        d.send(#"{"id":"c1","target":"T","action":"a","fds":1,"params":{"$fd":0}}"#, descriptors: 1, from: 1)
        d.send(#"{"target":"T","action":"oneway"}"#, from: 1)
        d.disconnect(1)
        #expect(d.descriptorsHeld.isEmpty, "the held call's descriptor is closed")
        #expect(!d.broker.hasHeldCalls)
        #expect(registerAgain(d, "T", actions: #"["a","oneway"]"#, from: 2).isEmpty)
    }

    @Test func aDescriptorOfACallNobodyClaimsIsClosed() {
        let d = crashed()
        d.broker.passesDescriptors = true
        _ = d.daemon("hello", #"{"protocol":1,"fds":true}"#, from: 1)
        d.send(#"{"id":"c1","target":"T","action":"a","fds":1,"params":{"$fd":0}}"#, descriptors: 1, from: 1)
        #expect(d.take(1).isEmpty)
        d.advance(ms: 1000)
        d.expire()
        #expect(errorCode(d.takeOne(1)) == "target_not_found")
        #expect(d.descriptorsHeld.isEmpty)
    }

    @Test func aHandOverAnswersEveryHeldCall() {
        let d = crashed()
        d.send(#"{"id":"c1","target":"T","action":"a"}"#, from: 1)
        // The snapshot does not carry them: a hand-over that could not wait them out answers them.
        #expect(d.broker.hasUncarriedHeldCalls)
        d.apply(d.broker.answerUncarriedHeldCalls(MediatorError(.componentUnavailable, "mediatord restarted"), now: d.now))
        #expect(errorCode(d.takeOne(1)) == "component_unavailable")
        #expect(!d.broker.hasHeldCalls)
        // And the window is closed with them.
        d.send(#"{"id":"c2","target":"T","action":"a"}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "target_not_found")
    }

    @Test func heldCallsCountAgainstTheCallerLimit() {
        let d = crashed { $0.maxCallsInFlightPerConnection = 2 }
        for id in 1...3 { d.send(#"{"id":\#(id),"target":"T","action":"a"}"#, from: 1) }
        let refused = d.takeJSON(1)
        #expect(refused.count == 1)
        #expect(refused.first?["id"] == 3)
        #expect(registerAgain(d, "T", from: 2).count == 2)
    }

    @Test func theSettingCanTurnTheHoldOff() throws {
        var configuration = DaemonConfiguration()
        try configuration.apply(json: ["reregister_hold_ms": 1])
        #expect(configuration.reregisterHoldMs == 1)
        #expect(DaemonConfiguration().reregisterHoldMs == 1000)
    }
}

@Suite("ReregistrationHold")
struct ReregistrationHoldStateTests {
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func call(_ caller: ConnectionID, _ id: Int64?, _ target: String, deadlineMs: Int64? = nil) -> ManagedComponent.HeldCall {
        ManagedComponent.HeldCall(
            caller: caller,
            request: Broker.RouteRequest(
                target: target, action: "a", params: nil, id: id.map { MessageID.int($0) }, idBytes: nil, timeoutMs: nil, more: false,
                viaURL: false),
            deadline: deadlineMs.map { start + .milliseconds($0) }, bytes: 10)
    }

    @Test func closedUntilOpened() {
        var hold = ReregistrationHold()
        #expect(!hold.isOpen(at: start))
        #expect(hold.nextWakeUp == nil)
        hold.open(until: start + .milliseconds(1000))
        #expect(hold.isOpen(at: start + .milliseconds(999)))
        #expect(!hold.isOpen(at: start + .milliseconds(1000)))
    }

    @Test func nextWakeUpIsTheEarlierOfDeadlineAndWindowEnd() {
        var hold = ReregistrationHold()
        hold.open(until: start + .milliseconds(1000))
        hold.hold(call(1, 1, "T", deadlineMs: 300))
        hold.hold(call(1, 2, "T", deadlineMs: 5000))
        #expect(hold.nextWakeUp == start + .milliseconds(300))
        let (timedOut, unclaimed) = hold.expire(now: start + .milliseconds(300))
        #expect(timedOut.map(\.request.id) == [.int(1)])
        #expect(unclaimed.isEmpty)
        #expect(hold.nextWakeUp == start + .milliseconds(1000))
        #expect(hold.index.calls(of: 1) == 1)
        let end = hold.expire(now: start + .milliseconds(1000))
        #expect(end.unclaimed.map(\.request.id) == [.int(2)])
        #expect(hold.isEmpty)
        #expect(hold.windowEnd == nil)
    }

    @Test func releaseCancelAndDropKeepTheIndexTrue() {
        var hold = ReregistrationHold()
        hold.open(until: start + .milliseconds(1000))
        hold.hold(call(1, 1, "T"))
        hold.hold(call(2, 1, "T"))
        hold.hold(call(1, 2, "U"))
        hold.hold(call(1, nil, "U"))
        #expect(hold.index.calls(of: 1) == 3)
        #expect(hold.cancel(caller: 1, id: .int(2))?.request.target == "U")
        #expect(hold.cancel(caller: 1, id: .int(2)) == nil)
        #expect(hold.drop(from: 2).count == 1)
        #expect(hold.release("T").map(\.caller) == [1])
        #expect(hold.index.calls(of: 1) == 1, "the oneway call to U")
        #expect(hold.release("T").isEmpty)
        #expect(hold.drop(from: 1).count == 1)
        #expect(hold.isEmpty)
    }

    @Test func openingAgainNeverShortensTheWindow() {
        var hold = ReregistrationHold()
        hold.open(until: start + .milliseconds(1000))
        hold.open(until: start + .milliseconds(500))
        #expect(hold.windowEnd == start + .milliseconds(1000))
    }

    @Test func aWindowForSomeTargetsHoldsOnlyThoseAndIsWidenedNeverNarrowed() {
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var hold = ReregistrationHold()
        hold.open(until: start + .milliseconds(1_000), only: ["A"])
        #expect(hold.holds("A", at: start) && !hold.holds("B", at: start))
        hold.open(until: start + .milliseconds(1_000), only: ["B"])
        #expect(hold.holds("A", at: start) && hold.holds("B", at: start) && !hold.holds("C", at: start))
        hold.open(until: start + .milliseconds(1_000))
        #expect(hold.holds("C", at: start), "a crash's window holds every target")
        hold.open(until: start + .milliseconds(1_000), only: ["A"])
        #expect(hold.holds("C", at: start), "and is not narrowed")
        _ = hold.expire(now: start + .milliseconds(1_000))
        #expect(!hold.holds("C", at: start + .milliseconds(1_000)))
        hold.open(until: start + .milliseconds(3_000), only: ["A"])
        #expect(!hold.holds("C", at: start + .milliseconds(2_000)), "a new window starts from its own targets")
    }
}
