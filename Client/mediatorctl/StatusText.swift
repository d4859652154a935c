#if canImport(Glibc)
import Glibc
#endif
import MediatorProtocol

/// What `mediatorctl status` prints for people, like `systemctl status`:
///
///     ● Notes - In-memory notes
///          State: running (exec)
///         PID(s): 4242 (python3)
///          Since: Fri 2026-11-27 10:20:01 UTC; 3m12s ago
///       Restarts: 0
///      Last exit: exited with status 3
///       Manifest: /etc/mediator/components/notes.json
///     Held calls: 0
///          Calls: 17 served
///
///     (the unit's last journal lines)
///
/// The bullet is `●` for a component that runs (or starts or stops), `○`
/// for one that does not, `×` for one the daemon gave up on or whose
/// manifest it skipped (`invalid`: then the problem instead of the pids). Lines the
/// daemon gives nothing for are left out (an older daemon, a target that
/// registered itself). Pure (a `status` result and journal lines in, text
/// out); everything shown is escaped.
public enum StatusText {
    /// The text, ending with a newline. `now` is the wall clock in seconds
    /// since the epoch, `time` writes one for people; with `width` the
    /// journal lines are cut to it, as systemctl cuts them.
    public static func render(
        _ status: JSONValue, journal: [String] = [], now: Double, width: Int? = nil,
        time: (Double) -> String = localTime
    ) -> String {
        let state = TargetTable.state(status)
        var text = bullet(state) + " " + (TargetTable.text(status["target"]).map(Output.escaped) ?? "?")
        if let description = TargetTable.text(status["description"]) { text += " - " + Output.escaped(description) }
        text += "\n"
        var lines: [(String, String)] = []
        if state == "invalid" {
            // A manifest the daemon skipped: nothing runs; what is wrong with it is the point.
            lines.append(("State", "invalid (the daemon skipped its manifest)"))
            if let problem = status["problem"] {
                let member = TargetTable.text(problem["member"]).map { "member \"\($0)\": " } ?? ""
                lines.append(("Problem", member + (TargetTable.text(problem["reason"]) ?? "?")))
            }
        } else {
            let activation = TargetTable.text(status["activation"]) ?? "registered itself"
            lines.append(("State", "\(state) (\(activation))"))
            lines.append(("PID(s)", pids(status)))
        }
        if let since = since(status, now: now, time: time) { lines.append(("Since", since)) }
        if let restarts = status["restarts"]?.intValue { lines.append(("Restarts", String(restarts))) }
        if let lastExit = TargetTable.text(status["last_exit"]) { lines.append(("Last exit", lastExit)) }
        if let manifest = TargetTable.text(status["manifest"]) { lines.append(("Manifest", manifest)) }
        if let unit = TargetTable.text(status["unit"]) { lines.append(("Unit", unit)) }
        if let held = status["held_calls"]?.intValue { lines.append(("Held calls", String(held))) }
        if let calls = status["calls_served"]?.intValue { lines.append(("Calls", "\(calls) served")) }
        let labelWidth = lines.map(\.0.count).max() ?? 0
        for (label, value) in lines {
            text += String(repeating: " ", count: labelWidth - label.count + 1) + label + ": " + Output.escaped(value) + "\n"
        }
        if !journal.isEmpty {
            text += "\n"
            for line in journal {
                let shown = Output.escaped(line)
                text += (width.map { TargetTable.truncate(shown, to: $0) } ?? shown) + "\n"
            }
        }
        return text
    }

    static func bullet(_ state: String) -> String {
        switch state {
        case "failed", "invalid": return "×"
        case "running", "starting", "stopping": return "●"
        default: return "○"
        }
    }

    /// The pids the daemon started (`pids`), else those of the instances,
    /// each with the name of its executable when known: `4242 (python3)`.
    static func pids(_ status: JSONValue) -> String {
        let instances = status["instances"]?.arrayValue ?? []
        var pids = (status["pids"]?.arrayValue ?? []).compactMap(\.intValue)
        if pids.isEmpty { pids = instances.compactMap { $0["pid"]?.intValue } }
        guard !pids.isEmpty else { return TargetTable.none }
        return pids.map { pid in
            let executable = instances.first { $0["pid"]?.intValue == pid }?["exe"]?.stringValue
            let name = executable.flatMap { $0.split(separator: "/").last }.map(String.init)
            return name.map { "\(pid) (\($0))" } ?? String(pid)
        }.joined(separator: ", ")
    }

    /// `Fri 2026-11-27 10:20:01 UTC; 3m12s ago`, from when it registered
    /// (`uptime_s`), with when its process started when that reads
    /// otherwise; only the process's start while it has not registered.
    static func since(_ status: JSONValue, now: Double, time: (Double) -> String) -> String? {
        let process = status["process_uptime_s"]?.doubleValue
        guard let uptime = status["uptime_s"]?.doubleValue else {
            return process.map { "process started \(time(now - $0)); \(TargetTable.uptime($0)) ago" }
        }
        var text = "\(time(now - uptime)); \(TargetTable.uptime(uptime)) ago"
        if let process, TargetTable.uptime(process) != TargetTable.uptime(uptime) {
            text += " (process started \(TargetTable.uptime(process)) ago)"
        }
        return text
    }

    /// Local time as systemctl writes it: `Fri 2026-11-27 10:20:01 UTC`.
    public static func localTime(_ seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e15 else { return TargetTable.none }
        var clock = time_t(seconds.rounded(.down))
        var parts = tm()
        guard localtime_r(&clock, &parts) != nil else { return TargetTable.none }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%a %Y-%m-%d %H:%M:%S %Z", &parts)
        return count > 0 ? String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : TargetTable.none
    }
}
