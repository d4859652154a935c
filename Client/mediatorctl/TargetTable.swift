import MediatorConfiguration
import MediatorProtocol

/// The table `mediatorctl list` prints for people, like `systemctl
/// list-units` or `busctl list`: one target a line,
///
///     TARGET   STATE        PID(S)  UPTIME  CALLS  ACTIVATION  DESCRIPTION
///     Notes    running      4242    3m12s   17     exec        In-memory notes
///     Weather  activatable  -       -       0      unit        Forecasts
///     Kv2      invalid      -       -       0      -           /etc/mediator/components.d/kv2.json: member "exec": …
///
///     Invalid manifests:
///       /etc/mediator/components.d/old.json: is not valid JSON: …
///
/// A target whose manifest the daemon skipped (state `invalid`) shows the
/// problem as its description; the skipped files no target stands for
/// follow the table.
///
/// Pure (a `list` result in, text out), so that it can be unit-tested.
/// Whatever a daemon leaves out shows as `-`, so an older daemon (no
/// `state`, `uptime_s`, `calls_served` or `activation`) still gets a table:
/// a target it lists without a state has registered, so it is `running`
/// when it has instances.
public enum TargetTable {
    public static let headers = ["TARGET", "STATE", "PID(S)", "UPTIME", "CALLS", "ACTIVATION", "DESCRIPTION"]

    /// At most this many pids are shown for a pool; the rest as `+N`.
    public static let maxPIDs = 3

    /// What stands for a value that is absent.
    public static let none = "-"

    /// The table for a `list` result (`{"targets": [...]}`), ending with a
    /// newline. With `width` (the terminal's columns) the description is
    /// cut to fit, with `…`; without it lines are never cut.
    public static func render(_ list: JSONValue, width: Int? = nil) -> String {
        let rows = (list["targets"]?.arrayValue ?? []).map(row)
        return layout([headers] + rows, width: width) + invalidManifests(list)
    }

    /// The skipped manifest files of a `list` result that no target row
    /// shows, after a blank line, one a line; nothing when there are none.
    static func invalidManifests(_ list: JSONValue) -> String {
        let problems = (list["invalid_manifests"]?.arrayValue ?? []).map(problem)
        let omitted = list["invalid_manifests_omitted"]?.intValue ?? 0
        guard !problems.isEmpty || omitted > 0 else { return "" }
        var lines = problems
        if omitted > 0 { lines.append("and \(omitted) more (the daemon's log names them)") }
        return "\nInvalid manifests:\n" + lines.map { "  " + Output.escaped($0) + "\n" }.joined()
    }

    /// A problem as `FILE: member "MEMBER": REASON`, from its JSON form.
    static func problem(_ json: JSONValue) -> String {
        ConfigFileProblem(json: json)?.description ?? json.jsonText
    }

    /// The cells of one target.
    public static func row(_ target: JSONValue) -> [String] {
        let instances = target["instances"]?.arrayValue ?? []
        return [
            text(target["target"]) ?? "?",
            state(target),
            pids(instances),
            target["uptime_s"]?.doubleValue.map(uptime) ?? none,
            target["calls_served"]?.intValue.map { String($0) } ?? none,
            text(target["activation"]) ?? none,
            text(target["description"]) ?? target["problem"].map(problem) ?? "",
        ]
    }

    /// `state`, else (a daemon that does not report it) `running` when the
    /// target has instances.
    public static func state(_ target: JSONValue) -> String {
        if let state = text(target["state"]) { return state }
        let instances = target["instances"]?.arrayValue ?? []
        return instances.isEmpty ? none : "running"
    }

    /// `4242`, `101,102,103`, `101,102,103,+2`; `-` without instances.
    public static func pids(_ instances: [JSONValue]) -> String {
        let pids = instances.map { $0["pid"]?.intValue.map { String($0) } ?? "?" }
        guard !pids.isEmpty else { return none }
        guard pids.count > maxPIDs else { return pids.joined(separator: ",") }
        return (pids.prefix(maxPIDs) + ["+\(pids.count - maxPIDs)"]).joined(separator: ",")
    }

    /// A duration for people, whole seconds: `42s`, `3m12s`, `2h05m`,
    /// `3d04h`. Negative or non-finite durations are `-`.
    public static func uptime(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return none }
        let total = seconds >= 9e18 ? Int64.max : Int64(seconds.rounded(.down))
        let (minutes, secs) = total.quotientAndRemainder(dividingBy: 60)
        let (hours, mins) = minutes.quotientAndRemainder(dividingBy: 60)
        let (days, hrs) = hours.quotientAndRemainder(dividingBy: 24)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : String(value) }
        if days > 0 { return "\(days)d\(two(hrs))h" }
        if hours > 0 { return "\(hours)h\(two(mins))m" }
        if minutes > 0 { return "\(minutes)m\(two(secs))s" }
        return "\(secs)s"
    }

    // MARK: - Layout

    /// Columns padded to their widest cell, two spaces apart, the last one
    /// unpadded and cut to `width` when given (never below the width of
    /// its header).
    ///
    /// Cells hold what the daemon and components said (names, descriptions,
    /// error codes): each is escaped here (``Output/escaped(_:)``), so a
    /// newline cannot forge a row nor ESC drive the terminal, and is then
    /// measured as it is shown. Every table mediatorctl prints (list, stats,
    /// top) is laid out here.
    static func layout(_ cells: [[String]], width: Int?) -> String {
        let rows = cells.map { $0.map(Output.escaped) }
        guard let columns = rows.first?.count, columns > 0 else { return "" }
        var widths = [Int](repeating: 0, count: columns)
        for row in rows {
            for (index, cell) in row.enumerated() where index < columns - 1 {
                widths[index] = max(widths[index], cell.count)
            }
        }
        let gap = "  "
        let leading = widths.dropLast().reduce(0) { $0 + $1 + gap.count }
        var lastWidth: Int?
        if let width {
            let headerWidth = rows[0][columns - 1].count
            lastWidth = max(width - leading, headerWidth)
        }
        var text = ""
        for row in rows {
            var line = ""
            for index in 0..<columns {
                let cell = index < row.count ? row[index] : ""
                if index < columns - 1 {
                    line += cell + String(repeating: " ", count: widths[index] - cell.count) + gap
                } else {
                    line += lastWidth.map { truncate(cell, to: $0) } ?? cell
                }
            }
            // A row whose last cell is empty ends in the gap.
            while line.last == " " { line.removeLast() }
            text += line + "\n"
        }
        return text
    }

    /// `text` cut to `count` characters, the last of them `…`.
    static func truncate(_ text: String, to count: Int) -> String {
        guard text.count > count else { return text }
        guard count > 0 else { return "" }
        return String(text.prefix(count - 1)) + "…"
    }

    /// A string member, with anything else (a number, say) as its JSON text.
    static func text(_ value: JSONValue?) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text.isEmpty ? nil : text
        case let other?: return other.jsonText
        }
    }
}
