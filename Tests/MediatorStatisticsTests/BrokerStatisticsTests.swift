import MediatorProtocol
import Testing

@testable import MediatorStatistics

@Suite struct BrokerStatisticsTests {
    @Test func countsAScriptedSequenceExactly() {
        var statistics = BrokerStatistics(slowCallThresholdNanoseconds: 1_000_000)
        let get = statistics.slot(target: "Notes", action: "get")
        let add = statistics.slot(target: "Notes", action: "add")
        let again = statistics.slot(target: "Notes", action: "get")
        #expect(again == get)
        statistics.callRouted(get, stream: false)
        let slow1 = statistics.answered(get, code: nil, durationNanoseconds: 10_000)
        #expect(!slow1)
        statistics.callRouted(get, stream: true)
        statistics.partial(get)
        statistics.partial(get)
        let slow2 = statistics.answered(get, code: nil, durationNanoseconds: 20_000)
        #expect(!slow2)
        statistics.callRouted(add, stream: false)
        statistics.timedOut(add)
        let slow3 = statistics.answered(add, code: "timeout", durationNanoseconds: 5_000_000)
        #expect(slow3)
        statistics.callRouted(add, stream: false)
        statistics.cancelled(add)
        let slow4 = statistics.answered(add, code: "cancelled", durationNanoseconds: 1000)
        #expect(!slow4)
        statistics.callRouted(add, stream: false)
        statistics.callerGone(add)
        statistics.callRouted(add, stream: false)
        let slow5 = statistics.answered(add, code: "not_found", durationNanoseconds: nil)
        #expect(!slow5)

        let getCounters = statistics.actions[get]
        #expect(getCounters.calls == 2 && getCounters.ok == 2 && getCounters.streams == 1 && getCounters.partials == 2)
        #expect(getCounters.latency.count == 2)
        let addCounters = statistics.actions[add]
        #expect(addCounters.calls == 4)
        #expect(addCounters.errors == ["timeout": 1, "cancelled": 1, "not_found": 1])
        #expect(addCounters.timeouts == 1 && addCounters.cancels == 1 && addCounters.callerGone == 1)
        #expect(addCounters.latency.count == 2)
        #expect(statistics.daemon.callsRouted == 6)
        #expect(statistics.calls(ofTarget: "Notes") == 6)
        #expect(statistics.calls(ofTarget: "Other") == 0)
    }

    @Test func actionEntriesAreCappedWithAnOverflowEntry() {
        var statistics = BrokerStatistics(maxActionEntries: 3)
        let a = statistics.slot(target: "A", action: "x")
        let b = statistics.slot(target: "B", action: "x")
        let c = statistics.slot(target: "C", action: "x")
        let d = statistics.slot(target: "D", action: "y")
        #expect(a != b)
        #expect(c == d)
        #expect(statistics.actions.count == 3)
        #expect(statistics.actions[c].target == BrokerStatistics.overflowTarget)
        // Known pairs keep their entries.
        let known = statistics.slot(target: "A", action: "x")
        #expect(known == a)
    }

    @Test func errorCodesPerActionAreBounded() {
        var statistics = BrokerStatistics()
        let slot = statistics.slot(target: "T", action: "a")
        for number in 0..<(ActionCounters.maxErrorCodes + 5) {
            _ = statistics.answered(slot, code: "code\(number)", durationNanoseconds: 1)
        }
        #expect(statistics.actions[slot].errors.count == ActionCounters.maxErrorCodes + 1)
        #expect(statistics.actions[slot].errors[ActionCounters.otherCode] == 5)
    }

    @Test func errorCodesOutsideTheRuleOrTooLongCountAsOther() {
        var statistics = BrokerStatistics(slowCallThresholdNanoseconds: 1)
        let slot = statistics.slot(target: "T", action: "a")
        let longest = String(repeating: "c", count: ActionCounters.maxCodeBytes)
        let codes = [
            longest, longest + "c", String(repeating: "x", count: 1 << 20), "Not Valid!", "", "9lives", "é", "ok_code",
            "http.404",
        ]
        for code in codes { _ = statistics.answered(slot, code: code, durationNanoseconds: 1) }
        #expect(statistics.actions[slot].errors == [longest: 1, "ok_code": 1, "http.404": 1, ActionCounters.otherCode: 6])
        statistics.heldCallEnded(slot, code: String(repeating: "y", count: 100))
        #expect(statistics.actions[slot].errors[ActionCounters.otherCode] == 7)
        statistics.logSlowCall(SlowCall(
            target: "T", action: "a", pid: nil, uid: nil, durationNanoseconds: 1, code: String(repeating: "z", count: 4096),
            endedAtNanoseconds: 0))
        #expect(statistics.slowCalls.entries.map(\.code) == [ActionCounters.otherCode])
    }

    /// A snapshot with one target of `actions` actions (each answered with a
    /// distinct code) and `uids` uids.
    static func crowded(actions: Int, uids: Int) -> StatisticsSnapshot {
        var statistics = BrokerStatistics()
        for number in 0..<actions {
            let slot = statistics.slot(target: "Big", action: "action\(number)")
            statistics.callRouted(slot, stream: false)
            _ = statistics.answered(slot, code: "code\(number)", durationNanoseconds: 1000)
        }
        _ = statistics.slot(target: "After", action: "x")
        for uid in 0..<UInt32(uids) { statistics.connectionOpened(uid: uid) }
        return StatisticsSnapshot(statistics: statistics, live: LiveFigures())
    }

    @Test func pagesStayWithinTheirBytesAndATargetCutAcrossPagesComesBackWhole() throws {
        let snapshot = Self.crowded(actions: 300, uids: 0)
        let bytes = 16 << 10
        var page = StatisticsSnapshot.Page(bytes: bytes)
        var actions: [String] = []
        var targets: [String] = []
        var pages = 0
        while true {
            let reply = snapshot.json(page: page)
            pages += 1
            // An entry's worth over the page at most (the first always goes in).
            #expect(reply.encoded.count < bytes + 4096, "page \(pages): \(reply.encoded.count) bytes")
            for entry in reply["targets"]?.arrayValue ?? [] {
                let name = try #require(entry["target"]?.stringValue)
                if targets.last != name { targets.append(name) }
                if name == "Big" {
                    #expect(entry["calls"] == .int(300), "the totals are the whole target's on every page")
                    actions += (entry["actions"]?.arrayValue ?? []).compactMap { $0["action"]?.stringValue }
                }
            }
            guard let next = reply["next"]?.stringValue, pages < 1000 else { break }
            page.after = next
            page.afterAction = reply["next_action"]?.stringValue
        }
        #expect(pages > 5)
        #expect(targets == ["After", "Big"])
        #expect(actions == (0..<300).map { "action\($0)" })

        // One target asked for alone is paged the same way.
        let alone = snapshot.json(target: "Big", page: StatisticsSnapshot.Page(bytes: bytes))
        #expect(alone.encoded.count < bytes + 4096)
        #expect(alone["next"] == "Big" && alone["next_action"] != nil)
    }

    @Test func listsBesideTheTargetsAreCutWithAMarker() {
        let snapshot = Self.crowded(actions: 1, uids: 2000)
        let bytes = 64 << 10
        let reply = snapshot.json(page: StatisticsSnapshot.Page(bytes: bytes))
        #expect(reply.encoded.count < bytes + 4096)
        let kept = reply["uids"]?.arrayValue?.count ?? 0
        #expect(kept > 0 && kept < 2000)
        #expect(reply["omitted"] == ["uids": .int(Int64(2000 - kept))])
        // Targets still have room.
        #expect(reply["targets"]?.arrayValue?.count == 2)
        // Unbounded, nothing is left out.
        #expect(snapshot.json()["omitted"] == nil)
        #expect(snapshot.json()["uids"]?.arrayValue?.count == 2000)
    }

    /// The host's descriptor counts: passed is what was neither closed nor is still held.
    @Test func descriptorsPassedReleasedAndInFlightAreReported() throws {
        var statistics = BrokerStatistics(slowCallThresholdNanoseconds: 1_000_000)
        statistics.quotaRefused(uid: 1000, quota: "max_fds_in_flight_per_uid")
        var live = LiveFigures()
        live.descriptors = DescriptorCounts(received: 20, released: 5, inFlight: 3, inFlightByUID: [1000: 2, 1001: 1])
        live.uids = [1000: LiveFigures.UID(connections: 1, fdsInFlight: 2), 1001: LiveFigures.UID(fdsInFlight: 1)]
        let json = StatisticsSnapshot(statistics: statistics, live: live).json()
        #expect(json["daemon"]?["fds_received"] == .int(20))
        #expect(json["daemon"]?["fds_passed"] == .int(12))
        #expect(json["daemon"]?["fds_released"] == .int(5))
        #expect(json["daemon"]?["fds_in_flight"] == .int(3))
        let uids = try #require(json["uids"]?.arrayValue)
        #expect(uids.map { $0["fds_in_flight"] } == [.int(2), .int(1)])
        #expect(uids.first?["quota_refusals"] == ["max_fds_in_flight_per_uid": .int(1)])
        #expect(DescriptorCounts().passed == 0)
    }

    @Test func snapshotJSON() throws {
        var statistics = BrokerStatistics(slowCallThresholdNanoseconds: 1_000_000)
        let slot = statistics.slot(target: "Notes", action: "get")
        statistics.callRouted(slot, stream: false)
        _ = statistics.answered(slot, code: "bad", durationNanoseconds: 2_000_000)
        statistics.logSlowCall(SlowCall(
            target: "Notes", action: "get", pid: 42, uid: 1000, durationNanoseconds: 2_000_000, code: "bad",
            endedAtNanoseconds: 3_000_000_000))
        statistics.connectionOpened(uid: 1000)
        statistics.quotaRefused(uid: 1000, quota: "max_calls_in_flight_per_uid")
        statistics.policyDenied(uid: 1000)
        statistics.componentActivated("Notes")
        statistics.componentStartFailed("Notes", .startTimeout)
        var live = LiveFigures()
        live.uptimeNanoseconds = 10_000_000_000
        live.connections = 1
        live.inFlightBySlot = [slot: 2]
        live.heldByTarget = ["Notes": 1]
        live.uids = [1000: LiveFigures.UID(connections: 1, callsInFlight: 2, queuedBytes: 7)]
        let json = StatisticsSnapshot(statistics: statistics, live: live).json()
        #expect(json["uptime_s"] == .double(10))
        #expect(json["daemon"]?["calls_routed"] == .int(1))
        #expect(json["daemon"]?["calls_in_flight"] == .int(2))
        #expect(json["daemon"]?["calls_held"] == .int(1))
        #expect(json["daemon"]?["policy_denials"] == .int(1))
        let target = try #require(json["targets"]?.arrayValue?.first)
        #expect(target["target"] == "Notes")
        #expect(target["calls"] == .int(1) && target["errors"] == .int(1))
        #expect(target["in_flight"] == .int(2) && target["held"] == .int(1))
        let action = try #require(target["actions"]?.arrayValue?.first)
        #expect(action["answers"] == ["ok": .int(0), "bad": .int(1)])
        #expect(action["latency"]?["count"] == .int(1))
        #expect(action["latency"]?["buckets"]?.arrayValue?.count == LatencyHistogram.bucketCount)
        #expect(json["uids"] == [[
            "uid": .int(1000), "connections": .int(1), "connections_opened": .int(1), "calls_in_flight": .int(2),
            "queued_bytes": .int(7), "fds_in_flight": .int(0), "quota_refusals": ["max_calls_in_flight_per_uid": .int(1)],
            "policy_denials": .int(1),
        ]])
        #expect(json["components"] == [[
            "target": "Notes", "activations": .int(1), "start_failures": ["start_timeout": .int(1)], "restarts": .int(0),
            "idle_exits": .int(0),
        ]])
        #expect(json["slow_calls"]?["threshold_ms"] == .double(1))
        #expect(json["slow_calls"]?["calls"] == [[
            "target": "Notes", "action": "get", "pid": .int(42), "uid": .int(1000), "duration_ms": .double(2), "code": "bad",
            "at_s": .double(3),
        ]])
        // One target, no slow calls.
        let narrowed = StatisticsSnapshot(statistics: statistics, live: live).json(target: "Other", slowCalls: false)
        #expect(narrowed["targets"] == [])
        #expect(narrowed["slow_calls"] == nil)
        #expect(narrowed["uids"] == nil)
    }
}
