import MediatorConfiguration
import MediatorProtocol
import MediatorStatistics
import MetricsTestKit
import NIOCore
import Testing

@testable import MediatorDaemon

/// The broker's counters (issue 12) after scripted sequences, read through
/// `mediator/stats` as a client would, with the driver's clock.
@Suite("Broker: statistics")
struct BrokerStatisticsTests {
    /// Connection 1 calls (uid 1001, pid 4101), 2 serves `Svc` with actions `a` and `b`.
    func driver(_ configure: (inout DaemonConfiguration) -> Void = { _ in }) -> BrokerDriver {
        let d = BrokerDriver(configure)
        d.broker.statisticsStart = d.start
        d.connect(1)
        d.connect(2)
        d.register("Svc", actions: #"["a","b"]"#, from: 2)
        return d
    }

    /// Sends a call from `connection` and returns the daemon's id on the forwarded request.
    func call(_ d: BrokerDriver, _ id: Int, _ action: String, extra: String = "", from connection: ConnectionID = 1) -> Int64? {
        d.send(#"{"id":\#(id),"target":"Svc","action":"\#(action)"\#(extra)}"#, from: connection)
        return d.takeJSON(2).first { $0["target"] != nil }?["id"]?.intValue
    }

    func stats(_ d: BrokerDriver, _ params: String = "{}", from connection: ConnectionID = 1) -> JSONValue? {
        _ = d.take(connection)
        return d.daemon("stats", params, from: connection)?["result"]
    }

    func action(_ stats: JSONValue?, _ target: String, _ name: String) -> JSONValue? {
        stats?["targets"]?.arrayValue?.first { $0["target"]?.stringValue == target }?["actions"]?.arrayValue?
            .first { $0["action"]?.stringValue == name }
    }

    @Test func successesErrorsStreamsTimeoutsCancelsAndGoneCallersAreCountedExactly() throws {
        let d = driver()
        // A result after 2 ms.
        let first = try #require(call(d, 1, "a"))
        d.advance(ms: 2)
        d.send(#"{"id":\#(first),"result":{}}"#, from: 2)
        // A component's error, and a daemon's (invalid params never reach it: not counted per action).
        let second = try #require(call(d, 2, "a"))
        d.send(#"{"id":\#(second),"error":{"code":"not_found","message":"no"}}"#, from: 2)
        // A stream: two partials, then the final result.
        let third = try #require(call(d, 3, "b", extra: #","more":true"#))
        d.send(#"{"id":\#(third),"result":{"p":1},"continues":true}"#, from: 2)
        d.send(#"{"id":\#(third),"result":{"p":2},"continues":true}"#, from: 2)
        d.send(#"{"id":\#(third),"result":{}}"#, from: 2)
        // A timeout.
        _ = try #require(call(d, 4, "b", extra: #","timeout_ms":100"#))
        d.advance(ms: 150)
        d.expire()
        // A cancel.
        _ = try #require(call(d, 5, "a"))
        d.send(#"{"id":"c","target":"mediator","action":"cancel","params":{"id":5}}"#, from: 1)
        // A caller that goes away.
        d.connect(3)
        _ = try #require(call(d, 6, "a", from: 3))
        d.disconnect(3)
        // A oneway call: counted as a call, never answered.
        d.send(#"{"target":"Svc","action":"b"}"#, from: 1)
        _ = d.take(2)
        // One still in flight.
        _ = try #require(call(d, 7, "a"))
        _ = d.take(1)

        let result = stats(d)
        let a = try #require(action(result, "Svc", "a"))
        #expect(a["calls"] == 5)
        #expect(a["answers"] == ["ok": 1, "not_found": 1, "cancelled": 1])
        #expect(a["errors"] == 2)
        #expect(a["cancels"] == 1 && a["caller_gone"] == 1 && a["timeouts"] == 0)
        #expect(a["in_flight"] == 1)
        #expect(a["latency"]?["count"] == 3)
        // 2 ms lands in the bucket up to 2^21 ns; the other two at 0 ms in the first.
        let buckets = a["latency"]?["buckets"]?.arrayValue ?? []
        #expect(buckets.first == 2 && buckets[11] == 1)
        let b = try #require(action(result, "Svc", "b"))
        #expect(b["calls"] == 3)
        #expect(b["answers"] == ["ok": 1, "timeout": 1])
        #expect(b["streams"] == 1 && b["partials"] == 2 && b["timeouts"] == 1)
        #expect(b["latency"]?["count"] == 2)
        #expect(b["latency"]?["p99_ms"]?.doubleValue.map { $0 > 134 && $0 <= 269 } == true, "150 ms is in (134, 268] ms")
        let svc = result?["targets"]?.arrayValue?.first
        #expect(svc?["calls"] == 8 && svc?["errors"] == 3 && svc?["in_flight"] == 1)
        #expect(result?["daemon"]?["calls_routed"] == 8)
        #expect(result?["daemon"]?["calls_in_flight"] == 1)
        #expect(result?["daemon"]?["registrations"] == 1)
        #expect(result?["daemon"]?["connections"] == 2 && result?["daemon"]?["connections_opened"] == 3)
        #expect(result?["uptime_s"] == .double(0.152))
        // `list` reads calls_served from the same counters.
        _ = d.take(1)
        #expect(d.daemon("list", from: 1)?["result"]?["targets"]?.arrayValue?.first?["calls_served"] == 8)
    }

    @Test func aComponentGoneAndAnInvalidResultAreFinalAnswers() throws {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("Svc", actions: #"["a",{"name":"r","result":{"type":"object"}}]"#, from: 2)
        let first = try #require(call(d, 1, "r"))
        d.send(#"{"id":\#(first),"result":5}"#, from: 2)
        _ = try #require(call(d, 2, "a"))
        d.disconnect(2)
        let result = stats(d)
        #expect(action(result, "Svc", "r")?["answers"] == ["ok": 0, "invalid_result": 1])
        #expect(action(result, "Svc", "a")?["answers"] == ["ok": 0, "component_unavailable": 1])
        // The target went away; its history stays.
        #expect(result?["targets"]?.arrayValue?.count == 1)
    }

    @Test func slowCallsAreLoggedWithTheCallerAndTheInjectedClock() throws {
        let d = driver { $0.slowCallThresholdMs = 1000 }
        let fast = try #require(call(d, 1, "a"))
        d.advance(ms: 999)
        d.send(#"{"id":\#(fast),"result":{}}"#, from: 2)
        let slow = try #require(call(d, 2, "b"))
        d.advance(ms: 1500)
        d.send(#"{"id":\#(slow),"error":{"code":"busy","message":"later"}}"#, from: 2)
        let log = stats(d)?["slow_calls"]
        #expect(log?["threshold_ms"] == .double(1000))
        #expect(log?["total"] == 1)
        #expect(log?["calls"] == [[
            "target": "Svc", "action": "b", "pid": 4101, "uid": 1001, "duration_ms": .double(1500), "code": "busy",
            "at_s": .double(2.499),
        ]])
        #expect(stats(d, #"{"slow":false}"#)?["slow_calls"] == nil)
        #expect(stats(d, #"{"target":"Other"}"#)?["targets"] == [])
    }

    @Test func policyDenialsQuotaRefusalsAndBadFramesArePerUID() throws {
        let d = driver { $0.maxCallsInFlightPerUID = 1 }
        _ = try #require(call(d, 1, "a"))
        d.send(#"{"id":2,"target":"Svc","action":"a"}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "overloaded")
        d.send("not json", from: 1)
        _ = d.take(1)
        d.broker.loadPolicy(Policy(rules: [Policy.Rule(match: .init(uid: 1001), allow: .init(call: []))]))
        d.send(#"{"id":3,"target":"Svc","action":"a"}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "forbidden")
        // uid 1001 may not read them now; root may.
        let refused = d.daemon("stats", from: 1)
        #expect(errorCode(refused) == "forbidden")
        #expect(refused?["error"]?["message"] == #"stats: uid 1001 may not monitor (stats needs the "monitor" grant)"#)
        d.connect(9, credentials: PeerCredentials(pid: 9, uid: 0, gid: 0))
        let result = try #require(stats(d, from: 9))
        #expect(result["daemon"]?["policy_denials"] == 2)
        #expect(result["daemon"]?["bad_frames"] == 1)
        let uid = result["uids"]?.arrayValue?.first { $0["uid"] == 1001 }
        #expect(uid?["quota_refusals"] == ["max_calls_in_flight_per_uid": 1])
        #expect(uid?["policy_denials"] == 2)
        #expect(uid?["calls_in_flight"] == 1 && uid?["connections"] == 1)
        #expect(action(result, "Svc", "a")?["calls"] == 1, "refused calls are not forwarded calls")
    }

    /// The host's descriptor counts reach `stats` through the closure it
    /// sets, per uid too; the quota's refusals are counted by its name.
    @Test func descriptorCountsOfTheHostAndQuotaRefusalsAreInStats() throws {
        let d = driver { $0.maxFdsInFlightPerUID = 2 }
        d.broker.passesDescriptors = true
        for connection: ConnectionID in [1, 2] { _ = d.daemon("hello", #"{"protocol":1,"fds":true}"#, from: connection) }
        d.broker.descriptorsHeld = { [unowned d] uid in d.descriptorsHeld.filter { $0.uid == uid }.reduce(0) { $0 + $1.count } }
        d.broker.descriptorCounts = {
            DescriptorCounts(received: 9, released: 3, inFlight: 2, inFlightByUID: [1001: 2, 4242: 0])
        }
        d.send(#"{"id":1,"target":"Svc","action":"a","fds":3}"#, descriptors: 3, from: 1)
        #expect(errorCode(d.takeOne(1)) == "overloaded")
        #expect(d.descriptorsHeld.isEmpty)
        let result = try #require(stats(d))
        #expect(result["daemon"]?["fds_received"] == 9)
        #expect(result["daemon"]?["fds_passed"] == 4)
        #expect(result["daemon"]?["fds_released"] == 3)
        #expect(result["daemon"]?["fds_in_flight"] == 2)
        let uid = result["uids"]?.arrayValue?.first { $0["uid"] == 1001 }
        #expect(uid?["fds_in_flight"] == 2)
        #expect(uid?["quota_refusals"] == ["max_fds_in_flight_per_uid": 1])
        // Without a host that counts them, zeros.
        d.broker.descriptorCounts = nil
        #expect(try #require(stats(d))["daemon"]?["fds_in_flight"] == 0)
    }

    @Test func activationsStartFailuresAndHeldCalls() throws {
        let d = BrokerDriver()
        d.broker.statisticsStart = d.start
        d.apply(d.broker.loadManifests([BrokerActivationTests.manifest("Notes", actions: ["add"])], now: d.now))
        d.connect(1)
        d.send(#"{"id":1,"target":"Notes","action":"add"}"#, from: 1)
        d.send(#"{"id":2,"target":"Notes","action":"add"}"#, from: 1)
        let held = stats(d)
        #expect(held?["daemon"]?["calls_held"] == 2)
        #expect(held?["targets"]?.arrayValue?.first?["held"] == 2)
        d.apply(d.broker.processExited(spawnID: d.spawns[0].spawnID, end: .exited(3), now: d.now))
        #expect(d.takeJSON(1).map(errorCode) == ["activation_failed", "activation_failed"])
        let failed = stats(d, #"{"target":"Notes"}"#)
        #expect(failed?["components"] == [[
            "target": "Notes", "activations": 1, "start_failures": ["exited": 1], "restarts": 0, "idle_exits": 0,
        ]])
        #expect(failed?["daemon"]?["calls_held"] == 0)
        // Held calls that were never forwarded still count under their action, untimed.
        let add = try #require(action(failed, "Notes", "add"))
        #expect(add["calls"] == 2 && add["answers"] == ["ok": 0, "activation_failed": 2] && add["latency"]?["count"] == 0)
        #expect(failed?["daemon"]?["calls_routed"] == 0)
    }

    @Test func heldCallsThatTimeOutAreCancelledOrLoseTheirCallerCountUnderTheirAction() throws {
        let d = BrokerDriver()
        d.broker.statisticsStart = d.start
        d.apply(d.broker.loadManifests([BrokerActivationTests.manifest("Notes", actions: ["add", "get"])], now: d.now))
        d.connect(1)
        d.connect(2)
        d.send(#"{"id":1,"target":"Notes","action":"add","timeout_ms":100}"#, from: 1)
        d.send(#"{"id":2,"target":"Notes","action":"get"}"#, from: 1)
        d.send(#"{"id":3,"target":"Notes","action":"get"}"#, from: 2)
        d.send(#"{"id":"c","target":"mediator","action":"cancel","params":{"id":2}}"#, from: 1)
        d.disconnect(2)
        d.advance(ms: 150)
        d.expire()
        #expect(d.takeJSON(1).compactMap(errorCode).sorted() == ["cancelled", "timeout"])
        let result = stats(d, #"{"target":"Notes"}"#)
        let add = try #require(action(result, "Notes", "add"))
        #expect(add["calls"] == 1 && add["timeouts"] == 1 && add["answers"] == ["ok": 0, "timeout": 1])
        let get = try #require(action(result, "Notes", "get"))
        #expect(get["calls"] == 2 && get["cancels"] == 1 && get["caller_gone"] == 1)
        #expect(get["answers"] == ["ok": 0, "cancelled": 1])
    }

    @Test func theDaemonDescribesStats() {
        let d = BrokerDriver()
        d.connect(1)
        let actions = d.daemon("describe", #"{"target":"mediator"}"#, from: 1)?["result"]?["actions"]?.arrayValue ?? []
        #expect(actions.contains { $0["name"] == "stats" })
    }

    @Test func theThresholdIsAConfigMember() throws {
        var configuration = DaemonConfiguration()
        try configuration.apply(json: ["slow_call_threshold_ms": 250])
        #expect(configuration.slowCallThresholdMs == 250)
        let d = BrokerDriver()
        d.broker.configuration = configuration
        #expect(d.broker.statistics.slowCallThresholdNanoseconds == 250_000_000)
    }

    @Test func latenciesGoToSwiftMetricsOnlyWhenAskedAndOneTimerPerAction() throws {
        let d = driver()
        let first = try #require(call(d, 1, "a"))
        d.advance(ms: 3)
        d.send(#"{"id":\#(first),"result":{}}"#, from: 2)

        let metrics = TestMetrics()
        d.broker.recordLatencies(to: metrics)
        let second = try #require(call(d, 2, "a"))
        d.advance(ms: 2)
        d.send(#"{"id":\#(second),"error":{"code":"not_found","message":"no"}}"#, from: 2)
        let third = try #require(call(d, 3, "a"))
        d.advance(ms: 5)
        d.send(#"{"id":\#(third),"result":{}}"#, from: 2)
        let fourth = try #require(call(d, 4, "b"))
        d.send(#"{"id":\#(fourth),"result":{}}"#, from: 2)

        let timers = metrics.timers(label: "mediator_call_duration_seconds")
        #expect(timers.count == 2)
        // The call answered before recording was asked for is not there; errors are timed like results.
        let a = try metrics.expectTimer("mediator_call_duration_seconds", [("target", "Svc"), ("action", "a")])
        #expect(a.values == [2_000_000, 5_000_000])
        let b = try metrics.expectTimer("mediator_call_duration_seconds", [("target", "Svc"), ("action", "b")])
        #expect(b.values == [0])
    }
}

extension BrokerStatisticsTests {
    @Test func statsAnswersInPagesOfTargetsLikeList() throws {
        let d = BrokerDriver()
        d.broker.statisticsStart = d.start
        d.connect(1)
        d.connect(2)
        for (id, name) in ["Alpha", "Beta", "Gamma"].enumerated() {
            d.register(name, actions: #"["a"]"#, from: 2)
            d.send(#"{"id":\#(id),"target":"\#(name)","action":"a"}"#, from: 1)
            _ = d.take(2)
        }
        let first = try #require(stats(d, #"{"limit":2}"#))
        #expect(first["targets"]?.arrayValue?.map { $0["target"] } == ["Alpha", "Beta"])
        #expect(first["next"] == "Beta")
        #expect(first["daemon"]?["calls_routed"] == 3 && first["uids"] != nil)
        let second = try #require(stats(d, #"{"limit":2,"after":"Beta"}"#))
        #expect(second["targets"]?.arrayValue?.map { $0["target"] } == ["Gamma"])
        #expect(second["next"] == nil)
        // Later pages carry their targets only.
        #expect(second["daemon"] == nil && second["uids"] == nil && second["slow_calls"] == nil)
        #expect(errorCode(d.daemon("stats", #"{"limit":0}"#, from: 1)) == "bad_request")
        #expect(errorCode(d.daemon("stats", #"{"after":7}"#, from: 1)) == "bad_request")
        // A page is cut by size too, as list's are: a quarter of the outbound limit.
        d.broker.configuration.maxOutboundBytes = 2400
        let small = try #require(stats(d))
        #expect(small["targets"]?.arrayValue?.count == 1 && small["next"] == "Alpha")
    }
}
