#if canImport(Glibc)
import Glibc
#endif
import MediatorProtocol

/// A monitor record as one line for a person at a terminal, as
/// `busctl monitor` and `dbus-monitor` print: the wall-clock time it was
/// received, then what happened between whom.
///
///     09:12:03.417 request notes-cli[4103] → notes[4102] Notes/add id=7
///     09:12:03.418 response notes[4102] → notes-cli[4103] Notes id="c" elapsed=0.812ms
///     09:12:03.420 refused notes-cli[4103] → mediatord Nobody/a id=8 code=target_not_found (no component …)
///     09:12:04.001 event notes[4102] → * user.login
///
/// Every string comes from peers: each goes through ``Output/escaped(_:)``.
enum MonitorLine {
    /// A time of day, local, to the millisecond.
    struct WallClock: Equatable {
        var hour: Int
        var minute: Int
        var second: Int
        var millisecond: Int

        /// Now, in the local time zone.
        static func now() -> WallClock {
            var spec = timespec()
            clock_gettime(CLOCK_REALTIME, &spec)
            var seconds = spec.tv_sec
            var local = tm()
            localtime_r(&seconds, &local)
            return WallClock(
                hour: Int(local.tm_hour), minute: Int(local.tm_min), second: Int(local.tm_sec),
                millisecond: Int(spec.tv_nsec / 1_000_000))
        }

        var text: String {
            func padded(_ value: Int, _ width: Int) -> String {
                let digits = String(value)
                return String(repeating: "0", count: max(0, width - digits.count)) + digits
            }
            return "\(padded(hour, 2)):\(padded(minute, 2)):\(padded(second, 2)).\(padded(millisecond, 3))"
        }
    }

    /// The record's line, without its LF.
    static func render(_ record: JSONValue, at time: WallClock) -> String {
        let message = record["message"]
        let type = record["type"]?.stringValue ?? "?"
        var parts = [time.text, Output.escaped(type), peer(record["from"]), "→"]
        switch type {
        case "event": parts.append("*")
        case "refused": parts.append("mediatord")
        default: parts.append(peer(record["to"]))
        }
        if let event = record["event"]?.stringValue {
            parts.append(Output.escaped(event))
        } else if let target = record["target"]?.stringValue {
            let action = record["action"]?.stringValue ?? message?["action"]?.stringValue
            parts.append(Output.escaped(action.map { "\(target)/\($0)" } ?? target))
        }
        if let id = message?["id"], id != .null { parts.append("id=\(Output.escaped(id.jsonText))") }
        if let elapsed = record["elapsed_us"]?.intValue { parts.append("elapsed=\(milliseconds(elapsed))ms") }
        if let error = message?["error"] {
            parts.append("code=\(Output.escaped(error["code"]?.stringValue ?? "?"))")
            if let text = error["message"]?.stringValue { parts.append("(\(Output.escaped(text)))") }
        }
        return parts.joined(separator: " ")
    }

    /// `name[pid]`, or `[pid]` for a peer that gave no name.
    static func peer(_ value: JSONValue?) -> String {
        let pid = value?["pid"]?.intValue.map(String.init) ?? "?"
        return "\(Output.escaped(value?["name"]?.stringValue ?? ""))[\(pid)]"
    }

    /// Microseconds as milliseconds with three decimals.
    static func milliseconds(_ microseconds: Int64) -> String {
        let fraction = String(abs(microseconds % 1000))
        return "\(microseconds / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}
