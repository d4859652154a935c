import MediatorProtocol

/// How `mediatorctl top` shows a ``TopFrame``: a screen for a terminal of
/// a given size, or one JSON line. Pure, so both are unit-tested.
///
///     mediatorctl top  uptime 1h02m  every 1s  order: calls/s  (c p e i n: order, q: quit)
///     connections 12  targets 5  calls/s 1523.0  in flight 3  held 0  denied/s 0.0  refused/s 2.0  bad frames 0  fds in flight 4  passed/s 10.0  closed/s 0.0
///
///     TARGET   CALLS/S  ERR/S  P50     P99    IN FLIGHT  HELD  CALLS
///     Notes    1500.0   0.0    0.05ms  0.3ms  2          0     120345
///
///     UID   CONNS  IN FLIGHT  QUEUED  FDS  REFUSED/S  REFUSED (THIS INTERVAL)
///     1000  3      8192       0       4    2.0        max_calls_in_flight_per_uid 2
///
/// The descriptor figures show once the daemon has received any.
enum TopScreen {
    static let headers = ["CALLS/S", "ERR/S", "P50", "P99", "IN FLIGHT", "HELD", "CALLS"]
    static let uidHeaders = ["UID", "CONNS", "IN FLIGHT", "QUEUED", "FDS", "REFUSED/S", "REFUSED (THIS INTERVAL)"]
    /// At most this many uid lines, below the targets.
    static let maxUIDRows = 5

    /// The screen's lines, at most `height` of them and each at most `width` characters.
    static func lines(
        _ frame: TopFrame, order: TopOrder, delay: Double, target: String?, width: Int, height: Int
    ) -> [String] {
        var lines = [
            "mediatorctl top  uptime \(StatsSummary.duration(frame.uptime))  every \(Output.seconds(delay))s"
                + "  order: \(title(order))  (c p e i n: order, q: quit)",
            "connections \(frame.connections)  targets \(frame.registeredTargets)  calls/s \(rate(frame.callsPerSecond))"
                + "  in flight \(frame.inFlight)  held \(frame.held)  denied/s \(rate(frame.deniedPerSecond))"
                + "  refused/s \(rate(frame.refusedPerSecond))  bad frames \(frame.badFrames)"
                + (frame.fdsReceived == 0 ? "" : "  fds in flight \(frame.fdsInFlight)"
                    + "  passed/s \(rate(frame.fdsPassedPerSecond))  closed/s \(rate(frame.fdsReleasedPerSecond))"),
            "",
        ]
        let uidRows = frame.uids.prefix(maxUIDRows).map { uid in
            [
                String(uid.uid), String(uid.connections), String(uid.inFlight), String(uid.queuedBytes),
                String(uid.fdsInFlight), rate(uid.refusalsPerSecond),
                uid.refusalsByQuota.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "),
            ]
        }
        // The uid table (a blank line, its header, its rows) only when a few target rows fit above it.
        let uidLines = uidRows.count + 2
        let available = height - lines.count - 1
        let showUIDs = !uidRows.isEmpty && available >= uidLines + 3
        let roomForRows = max(1, showUIDs ? available - uidLines : available)
        var table = [[target.map { "\($0) ACTION" } ?? "TARGET"] + headers]
        for row in frame.rows.prefix(roomForRows) {
            table.append([
                row.name, rate(row.callsPerSecond), rate(row.errorsPerSecond), StatsSummary.milliseconds(row.p50),
                StatsSummary.milliseconds(row.p99), String(row.inFlight), String(row.held), String(row.totalCalls),
            ])
        }
        if frame.rows.isEmpty { table.append([target == nil ? "(no calls yet)" : "(no calls to \(target ?? "") yet)"]) }
        lines += TargetTable.layout(table, width: nil).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        if showUIDs {
            lines.append("")
            lines += TargetTable.layout([uidHeaders] + uidRows, width: nil).split(separator: "\n").map(String.init)
        }
        return lines.prefix(max(1, height)).map { cut($0, to: width) }
    }

    /// One refresh as one JSON line (stdout not a terminal, or --json).
    static func json(_ frame: TopFrame, order: TopOrder, target: String?) -> JSONValue {
        func millis(_ value: Double?) -> JSONValue { value.map { .double(($0 * 1000).rounded() / 1000) } ?? .null }
        let rows: [JSONValue] = frame.rows.map { row in
            [
                target == nil ? "target" : "action": .string(row.name), "calls_per_s": .double(rounded(row.callsPerSecond)),
                "errors_per_s": .double(rounded(row.errorsPerSecond)), "p50_ms": millis(row.p50), "p99_ms": millis(row.p99),
                "in_flight": .int(Int64(row.inFlight)), "held": .int(Int64(row.held)), "calls": .int(Int64(row.totalCalls)),
            ]
        }
        let uids: [JSONValue] = frame.uids.map { uid in
            [
                "uid": .int(Int64(uid.uid)), "connections": .int(Int64(uid.connections)),
                "calls_in_flight": .int(Int64(uid.inFlight)), "queued_bytes": .int(Int64(uid.queuedBytes)),
                "fds_in_flight": .int(Int64(uid.fdsInFlight)), "quota_refusals_per_s": .double(rounded(uid.refusalsPerSecond)),
                "quota_refusals": .object(uid.refusalsByQuota.mapValues { .int(Int64($0)) }),
            ]
        }
        var members: [String: JSONValue] = [
            "uptime_s": .double(rounded(frame.uptime)), "interval_s": .double(rounded(frame.interval)),
            "order": .string(order.rawValue),
            "daemon": [
                "connections": .int(Int64(frame.connections)), "registered_targets": .int(Int64(frame.registeredTargets)),
                "calls_per_s": .double(rounded(frame.callsPerSecond)), "calls_in_flight": .int(Int64(frame.inFlight)),
                "calls_held": .int(Int64(frame.held)), "policy_denials_per_s": .double(rounded(frame.deniedPerSecond)),
                "quota_refusals_per_s": .double(rounded(frame.refusedPerSecond)), "bad_frames": .int(Int64(frame.badFrames)),
                "fds_in_flight": .int(Int64(frame.fdsInFlight)), "fds_passed_per_s": .double(rounded(frame.fdsPassedPerSecond)),
                "fds_released_per_s": .double(rounded(frame.fdsReleasedPerSecond)),
            ],
            "uids": .array(uids),
        ]
        if let target {
            members["target"] = .string(target)
            members["actions"] = .array(rows)
        } else {
            members["targets"] = .array(rows)
        }
        return .object(members)
    }

    static func title(_ order: TopOrder) -> String {
        switch order {
        case .calls: return "calls/s"
        case .p99: return "p99"
        case .errors: return "errors/s"
        case .inflight: return "in flight"
        case .name: return "name"
        }
    }

    /// One decimal.
    static func rate(_ value: Double) -> String { String(rounded(value)) }
    static func rounded(_ value: Double) -> Double { (value * 10).rounded() / 10 }

    static func cut(_ line: String, to width: Int) -> String {
        line.count <= width ? line : String(line.prefix(max(0, width)))
    }
}
