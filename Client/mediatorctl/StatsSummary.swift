import MediatorProtocol

/// What `mediatorctl stats` prints for people: the daemon's totals, then
/// one line per target and one per action under it,
///
///     uptime 1h02m  connections 12  calls 5321 (1.4/s)  in flight 2  held 0
///     policy denials 0  bad frames 0  backlog disconnects 0  slow calls 1 (over 1000 ms)
///
///     TARGET/ACTION  CALLS  CALLS/S  P50     P99     ERRORS  IN FLIGHT
///     Notes          5321   1.4      0.3ms   2.1ms   3       2
///       add          5000   1.3      0.3ms   1.9ms   0       2
///
/// Pure (a `mediator/stats` result in, text out), so that it can be tested.
public enum StatsSummary {
    public static let headers = ["TARGET/ACTION", "CALLS", "CALLS/S", "P50", "P99", "ERRORS", "IN FLIGHT"]

    public static func render(_ stats: JSONValue) -> String {
        let uptime = stats["uptime_s"]?.doubleValue ?? 0
        let daemon = stats["daemon"] ?? .object([:])
        func number(_ value: JSONValue?) -> String { value?.intValue.map { String($0) } ?? "-" }
        let calls = daemon["calls_routed"]?.intValue ?? 0
        var text = "uptime \(duration(uptime))  connections \(number(daemon["connections"]))"
            + "  calls \(calls) (\(rate(calls, uptime))/s)  in flight \(number(daemon["calls_in_flight"]))"
            + "  held \(number(daemon["calls_held"]))\n"
        text += "policy denials \(number(daemon["policy_denials"]))  bad frames \(number(daemon["bad_frames"]))"
            + "  backlog disconnects \(number(daemon["backlog_disconnects"]))"
        if let slow = stats["slow_calls"] {
            text += "  slow calls \(number(slow["total"])) (over \(milliseconds(slow["threshold_ms"]?.doubleValue)))"
        }
        text += "\n"
        if let nats = stats["nats"] {
            text += "nats \(nats["host"]?.stringValue ?? "-")  remote hosts \(number(nats["remote_hosts"]))"
                + "  imported \(number(nats["imported"]))  importing \(number(nats["importing"]))"
                + "  refused \(number(nats["refused"]))  register failures \(number(nats["register_failures"]))"
                + "  exported \(number(nats["exported"]))\n"
        }
        text += "\n"
        var rows = [headers]
        for target in stats["targets"]?.arrayValue ?? [] {
            rows.append(row(target["target"]?.stringValue ?? "?", target, uptime: uptime))
            for action in target["actions"]?.arrayValue ?? [] {
                rows.append(row("  " + (action["action"]?.stringValue ?? "?"), action, uptime: uptime))
            }
        }
        text += TargetTable.layout(rows, width: nil)
        let slowCalls = stats["slow_calls"]?["calls"]?.arrayValue ?? []
        if !slowCalls.isEmpty {
            text += "\nSLOW CALLS (last \(slowCalls.count))\n"
            var slowRows = [["TARGET/ACTION", "DURATION", "CODE", "PID", "UID", "AT"]]
            for call in slowCalls {
                slowRows.append([
                    "\(call["target"]?.stringValue ?? "?")/\(call["action"]?.stringValue ?? "?")",
                    milliseconds(call["duration_ms"]?.doubleValue), call["code"]?.stringValue ?? "-",
                    number(call["pid"]), number(call["uid"]), call["at_s"]?.doubleValue.map(duration) ?? "-",
                ])
            }
            text += TargetTable.layout(slowRows, width: nil)
        }
        // The daemon bounds its reply; what it left out, it counts.
        if let omitted = stats["omitted"]?.objectValue, !omitted.isEmpty {
            let counts = omitted.keys.sorted().map { "\(number(omitted[$0])) \($0.split(separator: "_").joined(separator: " "))" }
            text += "\nleft out of the reply (over its size): \(counts.joined(separator: ", "))\n"
        }
        return text
    }

    static func row(_ name: String, _ entry: JSONValue, uptime: Double) -> [String] {
        let calls = entry["calls"]?.intValue ?? 0
        return [
            name, String(calls), rate(calls, uptime),
            milliseconds(entry["latency"]?["p50_ms"]?.doubleValue), milliseconds(entry["latency"]?["p99_ms"]?.doubleValue),
            entry["errors"]?.intValue.map { String($0) } ?? "-", entry["in_flight"]?.intValue.map { String($0) } ?? "-",
        ]
    }

    /// Calls per second since the daemon started, one decimal.
    static func rate(_ calls: Int64, _ uptime: Double) -> String {
        guard uptime > 0 else { return "-" }
        let value = Double(calls) / uptime
        return String((value * 10).rounded() / 10)
    }

    /// `0.25ms`, `12ms`, `1.5s`; `-` when absent.
    static func milliseconds(_ value: Double?) -> String {
        guard let value else { return "-" }
        if value >= 1000 { return trimmed(value / 1000) + "s" }
        if value >= 10 { return String(Int64(value.rounded())) + "ms" }
        return trimmed(value) + "ms"
    }

    static func trimmed(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int64(rounded)) : String(rounded)
    }

    /// `42s`, `3m12s`, `1h02m`.
    static func duration(_ seconds: Double) -> String {
        let whole = Int64(seconds)
        if whole < 60 { return "\(whole)s" }
        if whole < 3600 { return "\(whole / 60)m\(whole % 60 < 10 ? "0" : "")\(whole % 60)s" }
        let minutes = (whole % 3600) / 60
        return "\(whole / 3600)h\(minutes < 10 ? "0" : "")\(minutes)m"
    }
}
