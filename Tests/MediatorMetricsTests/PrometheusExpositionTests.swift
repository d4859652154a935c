import CoreMetrics
import MediatorMetrics
import MediatorStatistics
import Testing

@Suite("Prometheus exposition of the broker's statistics")
struct PrometheusExpositionTests {
    /// The sample lines of a scrape, by series (`name{labels}`), without comments.
    static func samples(_ bytes: [UInt8]) -> [String: String] {
        var samples: [String: String] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " ") else { continue }
            samples[String(line[..<space])] = String(line[line.index(after: space)...])
        }
        return samples
    }

    static func scripted() -> StatisticsSnapshot {
        var statistics = BrokerStatistics(slowCallThresholdNanoseconds: 1_000_000)
        let add = statistics.slot(target: "Notes", action: "add")
        let feed = statistics.slot(target: "Notes", action: "feed")
        for _ in 0..<3 { statistics.callRouted(add, stream: false) }
        _ = statistics.answered(add, code: nil, durationNanoseconds: 40_000)
        _ = statistics.answered(add, code: "not_found", durationNanoseconds: 50_000)
        statistics.timedOut(add)
        _ = statistics.answered(add, code: "timeout", durationNanoseconds: 2_000_000)
        statistics.callRouted(feed, stream: true)
        statistics.partial(feed)
        statistics.partial(feed)
        statistics.connectionOpened(uid: 1000)
        statistics.quotaRefused(uid: 1000, quota: "max_calls_in_flight_per_uid")
        statistics.policyDenied(uid: 1000)
        statistics.componentActivated("Notes")
        statistics.componentStartFailed("Notes", .startTimeout)
        statistics.daemon.badFrames = 2
        var live = LiveFigures()
        live.uptimeNanoseconds = 1_500_000_000
        live.connections = 1
        live.registeredTargets = 1
        live.inFlightBySlot[feed] = 1
        live.heldByTarget["Later"] = 4
        live.uids[1000] = LiveFigures.UID(connections: 1, callsInFlight: 1, queuedBytes: 512, fdsInFlight: 3)
        statistics.quotaRefused(uid: 1000, quota: "max_fds_in_flight_per_uid")
        live.descriptors = DescriptorCounts(received: 10, released: 4, inFlight: 3, inFlightByUID: [1000: 3])
        return StatisticsSnapshot(statistics: statistics, live: live)
    }

    @Test("Every counter and gauge of a scripted snapshot is exported under its name and labels")
    func scriptedSnapshot() {
        let exposition = PrometheusExposition()
        let samples = Self.samples(exposition.scrape(Self.scripted()))
        let expected: [String: String] = [
            #"mediator_calls_routed_total{target="Notes",action="add"}"#: "3",
            #"mediator_calls_total{target="Notes",action="add",code="ok"}"#: "1",
            #"mediator_calls_total{target="Notes",action="add",code="not_found"}"#: "1",
            #"mediator_calls_total{target="Notes",action="add",code="timeout"}"#: "1",
            #"mediator_call_timeouts_total{target="Notes",action="add"}"#: "1",
            #"mediator_calls_in_flight{target="Notes",action="add"}"#: "0.0",
            #"mediator_calls_in_flight{target="Notes",action="feed"}"#: "1.0",
            #"mediator_streams_total{target="Notes",action="feed"}"#: "1",
            #"mediator_stream_partials_total{target="Notes",action="feed"}"#: "2",
            #"mediator_calls_held{target="Later"}"#: "4.0",
            #"mediator_component_activations_total{target="Notes"}"#: "1",
            #"mediator_component_start_failures_total{target="Notes",reason="start_timeout"}"#: "1",
            #"mediator_uid_quota_refusals_total{uid="1000",quota="max_calls_in_flight_per_uid"}"#: "1",
            #"mediator_uid_policy_denials_total{uid="1000"}"#: "1",
            #"mediator_uid_connections{uid="1000"}"#: "1.0",
            #"mediator_uid_queued_bytes{uid="1000"}"#: "512.0",
            #"mediator_uid_fds_in_flight{uid="1000"}"#: "3.0",
            #"mediator_uid_quota_refusals_total{uid="1000",quota="max_fds_in_flight_per_uid"}"#: "1",
            "mediator_fds_received_total": "10",
            "mediator_fds_passed_total": "3",
            "mediator_fds_released_total": "4",
            "mediator_fds_in_flight": "3.0",
            "mediator_uptime_seconds": "1.5",
            "mediator_connections": "1.0",
            "mediator_bad_frames_total": "2",
            "mediator_policy_denials_total": "1",
            "mediator_slow_calls_total": "0",
        ]
        for (series, value) in expected {
            #expect(samples[series] == value, "\(series)")
        }
    }

    @Test("Counters advance by what grew between scrapes; gauges not in the snapshot fall to zero")
    func secondScrape() {
        let exposition = PrometheusExposition()
        var snapshot = Self.scripted()
        _ = exposition.scrape(snapshot)
        let add = snapshot.statistics.slot(target: "Notes", action: "add")
        snapshot.statistics.callRouted(add, stream: false)
        snapshot.statistics.daemon.badFrames = 5
        snapshot.live.heldByTarget = [:]
        snapshot.live.uids = [:]
        let samples = Self.samples(exposition.scrape(snapshot))
        #expect(samples[#"mediator_calls_routed_total{target="Notes",action="add"}"#] == "4")
        #expect(samples["mediator_bad_frames_total"] == "5")
        #expect(samples[#"mediator_calls_held{target="Later"}"#] == "0.0")
        #expect(samples[#"mediator_uid_connections{uid="1000"}"#] == "0.0")
        // What a uid did stays counted after it is gone.
        #expect(samples[#"mediator_uid_policy_denials_total{uid="1000"}"#] == "1")
    }

    @Test("The broker's latency timers become one histogram with the documented buckets")
    func latencyHistogram() {
        let exposition = PrometheusExposition()
        let timer = CoreMetrics.Timer(
            label: LatencyHistogram.metricsLabel, dimensions: [("target", "Notes"), ("action", "add")],
            factory: exposition.latencyFactory)
        timer.recordNanoseconds(30_000)
        timer.recordNanoseconds(80_000_000)
        let text = String(decoding: exposition.scrape(Self.scripted()), as: UTF8.self)
        #expect(text.contains("# HELP mediator_call_duration_seconds "))
        #expect(text.contains("# TYPE mediator_call_duration_seconds histogram"))
        let samples = Self.samples(Array(text.utf8))
        let labels = #"target="Notes",action="add""#
        #expect(samples["mediator_call_duration_seconds_bucket{\(labels),le=\"0.000025\"}"] == "0")
        #expect(samples["mediator_call_duration_seconds_bucket{\(labels),le=\"0.00005\"}"] == "1")
        #expect(samples["mediator_call_duration_seconds_bucket{\(labels),le=\"0.1\"}"] == "2")
        #expect(samples["mediator_call_duration_seconds_bucket{\(labels),le=\"+Inf\"}"] == "2")
        #expect(samples["mediator_call_duration_seconds_count{\(labels)}"] == "2")
        #expect(samples["mediator_call_duration_seconds_sum{\(labels)}"] == "0.08003")
    }
}
