import MediatorProtocol
import Testing

@testable import mediatorctl

@Suite("mediatorctl top: rates, interval latencies, order and screen")
struct TopModelTests {
    /// Bounds as the daemon sends them: 1 µs, 2 µs, 4 µs, then unbounded.
    static let bounds: JSONValue = [1000, 2000, 4000, nil]

    static func stats(uptime: Double, routed: Int64, targets: [JSONValue], uids: [JSONValue] = [], denials: Int64 = 0) -> JSONValue {
        [
            "uptime_s": .double(uptime),
            "daemon": [
                "connections": 3, "registered_targets": .int(Int64(targets.count)), "calls_routed": .int(routed),
                "calls_in_flight": 1, "calls_held": 0, "policy_denials": .int(denials), "bad_frames": 2,
            ],
            "latency_bucket_bounds_ns": bounds,
            "targets": .array(targets),
            "uids": .array(uids),
        ]
    }

    static func target(_ name: String, calls: Int64, errors: Int64 = 0, buckets: [Int64], inFlight: Int64 = 0, held: Int64 = 0) -> JSONValue {
        [
            "target": .string(name), "calls": .int(calls), "errors": .int(errors), "in_flight": .int(inFlight),
            "held": .int(held),
            "actions": [[
                "action": "a", "calls": .int(calls), "errors": .int(errors), "in_flight": .int(inFlight),
                "latency": ["buckets": .array(buckets.map { .int($0) })],
            ]],
        ]
    }

    @Test func theFirstFrameIsSinceStartAndLaterOnesOverTheInterval() {
        let first = Self.stats(uptime: 10, routed: 100, targets: [Self.target("Notes", calls: 100, buckets: [100, 0, 0, 0])])
        let frame = TopModel.frame(previous: nil, current: first, order: .calls)
        #expect(frame.interval == 0)
        #expect(frame.callsPerSecond == 10)
        #expect(frame.rows.map(\.name) == ["Notes"] && frame.rows.first?.callsPerSecond == 10)

        // 2 s later: 40 more calls, all slow (2-4 µs), 4 of them errors.
        let second = Self.stats(
            uptime: 12, routed: 140, targets: [Self.target("Notes", calls: 140, errors: 4, buckets: [100, 0, 40, 0], inFlight: 2)])
        let next = TopModel.frame(previous: first, current: second, order: .calls)
        #expect(next.interval == 2)
        #expect(next.callsPerSecond == 20)
        let row = next.rows.first
        #expect(row?.callsPerSecond == 20 && row?.errorsPerSecond == 2 && row?.inFlight == 2 && row?.totalCalls == 140)
        // Only the interval's answers: all in the 2-4 µs bucket, so p50 = 3 µs.
        #expect(row?.p50 == 0.003)
        #expect(row?.p99 == 0.004)
        // No calls in an interval: no latency to show.
        let idle = TopModel.frame(previous: second, current: Self.stats(uptime: 13, routed: 140, targets: [
            Self.target("Notes", calls: 140, errors: 4, buckets: [100, 0, 40, 0]),
        ]), order: .calls)
        #expect(idle.rows.first?.p50 == nil && idle.rows.first?.callsPerSecond == 0)
    }

    @Test func aRestartedDaemonCountsFromItsStart() {
        let before = Self.stats(uptime: 100, routed: 5000, targets: [Self.target("Notes", calls: 5000, buckets: [5000, 0, 0, 0])])
        let after = Self.stats(uptime: 2, routed: 10, targets: [Self.target("Notes", calls: 10, buckets: [10, 0, 0, 0])])
        let frame = TopModel.frame(previous: before, current: after, order: .calls)
        #expect(frame.interval == 0 && frame.callsPerSecond == 5 && frame.rows.first?.callsPerSecond == 5)
    }

    @Test("Each order sorts the rows; ties by total calls then name", arguments: [
        (TopOrder.calls, ["Busy", "Slow", "Failing", "Idle"]),
        (.p99, ["Slow", "Busy", "Failing", "Idle"]),
        (.errors, ["Failing", "Busy", "Slow", "Idle"]),
        (.inflight, ["Idle", "Busy", "Slow", "Failing"]),
        (.name, ["Busy", "Failing", "Idle", "Slow"]),
    ])
    func orders(_ order: TopOrder, _ expected: [String]) {
        let current = Self.stats(uptime: 10, routed: 0, targets: [
            Self.target("Busy", calls: 50, buckets: [50, 0, 0, 0]),
            Self.target("Slow", calls: 20, buckets: [0, 0, 0, 20]),
            Self.target("Failing", calls: 10, errors: 10, buckets: [10, 0, 0, 0]),
            Self.target("Idle", calls: 0, buckets: [0, 0, 0, 0], inFlight: 1, held: 3),
        ])
        #expect(TopModel.frame(previous: nil, current: current, order: order).rows.map(\.name) == expected)
    }

    @Test func keysNameTheOrders() {
        #expect(TopOrder(key: "p") == .p99 && TopOrder(key: "i") == .inflight && TopOrder(key: "x") == nil)
    }

    @Test func refusedUIDsComeFirstWithTheirQuotas() {
        let uids: [JSONValue] = [
            ["uid": 0, "connections": 4, "calls_in_flight": 9, "queued_bytes": 0, "quota_refusals": [:]],
            ["uid": 1000, "connections": 1, "calls_in_flight": 1, "queued_bytes": 64, "quota_refusals": ["max_calls_in_flight_per_uid": 6]],
        ]
        let earlier: [JSONValue] = [
            ["uid": 1000, "connections": 1, "calls_in_flight": 1, "queued_bytes": 0, "quota_refusals": ["max_calls_in_flight_per_uid": 2]],
        ]
        let frame = TopModel.frame(
            previous: Self.stats(uptime: 8, routed: 0, targets: [], uids: earlier),
            current: Self.stats(uptime: 10, routed: 0, targets: [], uids: uids, denials: 0), order: .calls)
        #expect(frame.uids.map(\.uid) == [1000, 0])
        #expect(frame.uids.first?.refusalsByQuota == ["max_calls_in_flight_per_uid": 4])
        #expect(frame.uids.first?.refusalsPerSecond == 2 && frame.refusedPerSecond == 2)
    }

    @Test func theScreenFitsTheTerminalAndShowsTheOrder() {
        let targets = (0..<30).map { Self.target("Target\($0)", calls: Int64(100 - $0), buckets: [Int64(100 - $0), 0, 0, 0]) }
        let uids: [JSONValue] = [["uid": 1000, "connections": 1, "calls_in_flight": 1, "queued_bytes": 0, "quota_refusals": ["max_connections_per_uid": 3]]]
        let frame = TopModel.frame(previous: nil, current: Self.stats(uptime: 10, routed: 0, targets: targets, uids: uids), order: .calls)
        let lines = TopScreen.lines(frame, order: .errors, delay: 1, target: nil, width: 60, height: 20)
        #expect(lines.count == 20)
        #expect(lines.allSatisfy { $0.count <= 60 })
        #expect(lines[0].contains("order: errors/s"))
        #expect(lines[3].hasPrefix("TARGET") && lines[4].hasPrefix("Target0 "))
        // The uid table keeps its place at the bottom.
        #expect(lines.contains { $0.hasPrefix("UID") } && lines.last?.hasPrefix("1000 ") == true)
        // A small terminal: targets first, no uid table.
        let small = TopScreen.lines(frame, order: .calls, delay: 1, target: nil, width: 200, height: 8)
        #expect(small.count == 8 && !small.contains { $0.hasPrefix("UID") })
    }

    /// Descriptors: held now, passed and closed per second over the
    /// interval, per uid held; shown once the daemon received any.
    @Test func descriptorFiguresAreRatesOverTheIntervalAndShowOnceAnyArrived() throws {
        func stats(uptime: Double, received: Int64, passed: Int64, released: Int64, inFlight: Int64) -> JSONValue {
            guard case .object(var members) = Self.stats(uptime: uptime, routed: 0, targets: [], uids: [
                ["uid": 1000, "connections": 1, "calls_in_flight": 0, "queued_bytes": 0, "fds_in_flight": .int(inFlight),
                 "quota_refusals": ["max_fds_in_flight_per_uid": 3]],
            ]), case .object(var daemon)? = members["daemon"] else { return .null }
            daemon["fds_received"] = .int(received)
            daemon["fds_passed"] = .int(passed)
            daemon["fds_released"] = .int(released)
            daemon["fds_in_flight"] = .int(inFlight)
            members["daemon"] = .object(daemon)
            return .object(members)
        }
        let first = stats(uptime: 10, received: 30, passed: 20, released: 8, inFlight: 2)
        let second = stats(uptime: 12, received: 60, passed: 44, released: 12, inFlight: 4)
        let frame = TopModel.frame(previous: first, current: second, order: .calls)
        #expect(frame.fdsInFlight == 4 && frame.fdsPassedPerSecond == 12 && frame.fdsReleasedPerSecond == 2)
        #expect(frame.uids.first?.fdsInFlight == 4)
        let lines = TopScreen.lines(frame, order: .calls, delay: 2, target: nil, width: 300, height: 20)
        #expect(lines[1].hasSuffix("fds in flight 4  passed/s 12.0  closed/s 2.0"))
        #expect(lines.contains { $0.hasPrefix("UID") && $0.contains("FDS") })
        #expect(lines.last?.hasPrefix("1000  1      0          0       4    ") == true, "\(lines)")
        let json = TopScreen.json(frame, order: .calls, target: nil)
        #expect(json["daemon"]?["fds_in_flight"] == 4 && json["daemon"]?["fds_passed_per_s"] == 12.0)
        #expect(json["daemon"]?["fds_released_per_s"] == 2.0)
        #expect(json["uids"]?.arrayValue?.first?["fds_in_flight"] == 4)
        // A daemon that never received one: no descriptor figures on the screen.
        let none = TopModel.frame(previous: nil, current: Self.stats(uptime: 1, routed: 0, targets: []), order: .calls)
        #expect(!TopScreen.lines(none, order: .calls, delay: 1, target: nil, width: 300, height: 20)[1].contains("fds"))
    }

    @Test func oneJSONLinePerRefresh() throws {
        let current = Self.stats(uptime: 4, routed: 8, targets: [Self.target("Notes", calls: 8, buckets: [8, 0, 0, 0])])
        let json = TopScreen.json(TopModel.frame(previous: nil, current: current, order: .calls), order: .calls, target: nil)
        #expect(json["order"] == "calls")
        #expect(json["daemon"]?["calls_per_s"] == 2.0)
        let notes = try #require(json["targets"]?.arrayValue?.first)
        #expect(notes["target"] == "Notes" && notes["calls"] == 8 && notes["p50_ms"] == 0.001)
        #expect(!json.jsonText.contains("\n"))
    }
}
