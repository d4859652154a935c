import MediatorProtocol

/// What `mediatorctl top` shows at one refresh, computed from two
/// `mediator/stats` answers: rates and latencies over the interval between
/// them (not since the daemon started), so a target that just got slow
/// shows as slow now. Pure: JSON in, figures out.
struct TopFrame: Equatable {
    struct Row: Equatable {
        /// A target, or an action of `--target`'s target.
        var name: String
        var callsPerSecond: Double
        var errorsPerSecond: Double
        /// Over the interval, in milliseconds; nil without answers in it.
        var p50: Double?
        var p99: Double?
        var inFlight: Int
        var held: Int
        var totalCalls: Int
    }

    /// One uid's figures now, and its refusals over the interval by quota.
    struct UIDRow: Equatable {
        var uid: Int
        var connections: Int
        var inFlight: Int
        var queuedBytes: Int
        /// File descriptors it sent that the daemon holds now.
        var fdsInFlight: Int
        var refusalsPerSecond: Double
        var refusalsByQuota: [String: Int]
        var totalRefusals: Int
    }

    var uptime: Double
    /// Seconds between the two answers; 0 on the first refresh (rates are then since start).
    var interval: Double
    var connections: Int
    var registeredTargets: Int
    var callsPerSecond: Double
    var inFlight: Int
    var held: Int
    var deniedPerSecond: Double
    var refusedPerSecond: Double
    var badFrames: Int
    /// File descriptors: received since start (0: none ever, not shown),
    /// held now, and written on or closed undelivered per second.
    var fdsReceived: Int
    var fdsInFlight: Int
    var fdsPassedPerSecond: Double
    var fdsReleasedPerSecond: Double
    var rows: [Row]
    var uids: [UIDRow]
}

/// The orders `top` sorts rows by; each has its key on the terminal.
enum TopOrder: String, CaseIterable {
    case calls, p99, errors, inflight, name

    var key: Character {
        switch self {
        case .calls: return "c"
        case .p99: return "p"
        case .errors: return "e"
        case .inflight: return "i"
        case .name: return "n"
        }
    }

    init?(key: Character) {
        guard let order = Self.allCases.first(where: { $0.key == key }) else { return nil }
        self = order
    }
}

enum TopModel {
    /// The frame for `current`, with rates over the interval since
    /// `previous` (nil, or a daemon that restarted: since start). With
    /// `target`, the rows are that target's actions.
    static func frame(previous: JSONValue?, current: JSONValue, target: String? = nil, order: TopOrder) -> TopFrame {
        let uptime = current["uptime_s"]?.doubleValue ?? 0
        var before = previous
        var interval = uptime - (previous?["uptime_s"]?.doubleValue ?? 0)
        if previous == nil || interval <= 0 {
            before = nil
            interval = 0
        }
        let seconds = interval > 0 ? interval : uptime
        func rate(_ now: Int64?, _ then: Int64?) -> Double {
            guard seconds > 0 else { return 0 }
            return Double(max(0, (now ?? 0) - (then ?? 0))) / seconds
        }
        let daemon = current["daemon"] ?? [:]
        let daemonBefore = before?["daemon"]
        let bounds = (current["latency_bucket_bounds_ns"]?.arrayValue ?? []).map(\.intValue)

        var rows: [TopFrame.Row] = []
        let targets = current["targets"]?.arrayValue ?? []
        if let target {
            let entry = targets.first { $0["target"]?.stringValue == target }
            let entryBefore = before?["targets"]?.arrayValue?.first { $0["target"]?.stringValue == target }
            for action in entry?["actions"]?.arrayValue ?? [] {
                let name = action["action"]?.stringValue ?? "?"
                let then = entryBefore?["actions"]?.arrayValue?.first { $0["action"]?.stringValue == name }
                rows.append(row(name, action, then, buckets: { $0["latency"]?["buckets"] }, bounds: bounds, held: 0, rate: rate))
            }
        } else {
            for entry in targets {
                let name = entry["target"]?.stringValue ?? "?"
                let then = before?["targets"]?.arrayValue?.first { $0["target"]?.stringValue == name }
                rows.append(row(
                    name, entry, then, buckets: summedBuckets, bounds: bounds,
                    held: Int(entry["held"]?.intValue ?? 0), rate: rate))
            }
        }
        sort(&rows, by: order)

        var refusedNow: Int64 = 0
        var refusedThen: Int64 = 0
        var uids: [TopFrame.UIDRow] = []
        for entry in current["uids"]?.arrayValue ?? [] {
            let uid = entry["uid"]?.intValue ?? -1
            let then = before?["uids"]?.arrayValue?.first { $0["uid"]?.intValue == uid }
            var byQuota: [String: Int] = [:]
            var total: Int64 = 0
            var totalThen: Int64 = 0
            for (quota, count) in entry["quota_refusals"]?.objectValue ?? [:] {
                let now = count.intValue ?? 0
                let earlier = then?["quota_refusals"]?[quota]?.intValue ?? 0
                total += now
                totalThen += earlier
                if now > earlier { byQuota[quota] = Int(now - earlier) }
            }
            refusedNow += total
            refusedThen += totalThen
            uids.append(TopFrame.UIDRow(
                uid: Int(uid), connections: Int(entry["connections"]?.intValue ?? 0),
                inFlight: Int(entry["calls_in_flight"]?.intValue ?? 0), queuedBytes: Int(entry["queued_bytes"]?.intValue ?? 0),
                fdsInFlight: Int(entry["fds_in_flight"]?.intValue ?? 0), refusalsPerSecond: rate(total, totalThen), refusalsByQuota: byQuota, totalRefusals: Int(total)))
        }
        // The uids being refused first, then the busiest.
        uids.sort {
            ($0.refusalsPerSecond, $0.inFlight, $0.connections, -$0.uid) > ($1.refusalsPerSecond, $1.inFlight, $1.connections, -$1.uid)
        }

        return TopFrame(
            uptime: uptime, interval: interval,
            connections: Int(daemon["connections"]?.intValue ?? 0),
            registeredTargets: Int(daemon["registered_targets"]?.intValue ?? 0),
            callsPerSecond: rate(daemon["calls_routed"]?.intValue, daemonBefore?["calls_routed"]?.intValue),
            inFlight: Int(daemon["calls_in_flight"]?.intValue ?? 0), held: Int(daemon["calls_held"]?.intValue ?? 0),
            deniedPerSecond: rate(daemon["policy_denials"]?.intValue, daemonBefore?["policy_denials"]?.intValue),
            refusedPerSecond: rate(refusedNow, refusedThen),
            badFrames: Int(daemon["bad_frames"]?.intValue ?? 0),
            fdsReceived: Int(daemon["fds_received"]?.intValue ?? 0), fdsInFlight: Int(daemon["fds_in_flight"]?.intValue ?? 0),
            fdsPassedPerSecond: rate(daemon["fds_passed"]?.intValue, daemonBefore?["fds_passed"]?.intValue),
            fdsReleasedPerSecond: rate(daemon["fds_released"]?.intValue, daemonBefore?["fds_released"]?.intValue),
            rows: rows, uids: uids)
    }

    static func row(
        _ name: String, _ now: JSONValue, _ then: JSONValue?, buckets: (JSONValue) -> JSONValue?, bounds: [Int64?],
        held: Int, rate: (Int64?, Int64?) -> Double
    ) -> TopFrame.Row {
        let counts = difference(buckets(now), then.flatMap(buckets))
        return TopFrame.Row(
            name: name, callsPerSecond: rate(now["calls"]?.intValue, then?["calls"]?.intValue),
            errorsPerSecond: rate(now["errors"]?.intValue, then?["errors"]?.intValue),
            p50: quantile(0.5, counts, bounds), p99: quantile(0.99, counts, bounds),
            inFlight: Int(now["in_flight"]?.intValue ?? 0), held: held, totalCalls: Int(now["calls"]?.intValue ?? 0))
    }

    /// A target's histogram: its actions' buckets added up.
    static func summedBuckets(_ target: JSONValue) -> JSONValue? {
        var sum: [Int64] = []
        for action in target["actions"]?.arrayValue ?? [] {
            let counts = (action["latency"]?["buckets"]?.arrayValue ?? []).map { $0.intValue ?? 0 }
            if sum.count < counts.count { sum += Array(repeating: 0, count: counts.count - sum.count) }
            for (index, count) in counts.enumerated() { sum[index] += count }
        }
        return .array(sum.map { .int($0) })
    }

    /// Bucket counts now less then (a bucket that shrank, as after a restart, counts as now).
    static func difference(_ now: JSONValue?, _ then: JSONValue?) -> [Int64] {
        let current = (now?.arrayValue ?? []).map { $0.intValue ?? 0 }
        let earlier = (then?.arrayValue ?? []).map { $0.intValue ?? 0 }
        return current.enumerated().map { index, count in
            let before = index < earlier.count ? earlier[index] : 0
            return count >= before ? count - before : count
        }
    }

    /// The duration below which `fraction` of the counts fall, in
    /// milliseconds, interpolated inside its bucket as the daemon does; the
    /// last (unbounded) bucket gives its lower bound. nil without counts.
    static func quantile(_ fraction: Double, _ counts: [Int64], _ bounds: [Int64?]) -> Double? {
        let total = counts.reduce(0, +)
        guard total > 0 else { return nil }
        let rank = max(1, Int64((Double(total) * fraction).rounded(.up)))
        var seen: Int64 = 0
        for (index, count) in counts.enumerated() where count > 0 {
            if seen + count >= rank {
                let lower = index == 0 ? 0 : (index - 1 < bounds.count ? bounds[index - 1] ?? 0 : 0)
                guard index < bounds.count, let upper = bounds[index] else { return Double(lower) / 1e6 }
                let position = Double(rank - seen) / Double(count)
                return (Double(lower) + Double(upper - lower) * position) / 1e6
            }
            seen += count
        }
        return nil
    }

    static func sort(_ rows: inout [TopFrame.Row], by order: TopOrder) {
        rows.sort { a, b in
            switch order {
            case .name: return a.name < b.name
            case .calls where a.callsPerSecond != b.callsPerSecond: return a.callsPerSecond > b.callsPerSecond
            case .p99 where (a.p99 ?? -1) != (b.p99 ?? -1): return (a.p99 ?? -1) > (b.p99 ?? -1)
            case .errors where a.errorsPerSecond != b.errorsPerSecond: return a.errorsPerSecond > b.errorsPerSecond
            case .inflight where a.inFlight + a.held != b.inFlight + b.held: return a.inFlight + a.held > b.inFlight + b.held
            // Ties: the busier since start, then by name, so rows do not jump.
            default: return a.totalCalls != b.totalCalls ? a.totalCalls > b.totalCalls : a.name < b.name
            }
        }
    }
}
