import CSystemd
import Glibc

/// Tells the service manager about the daemon's state through `sd_notify`.
/// Without `NOTIFY_SOCKET` (not started by systemd) every call does nothing.
package struct SystemdNotifier: Sendable {
    package init() {}

    /// Whether a service manager listens (`NOTIFY_SOCKET` is set).
    package var isActive: Bool {
        (getenv("NOTIFY_SOCKET").map { String(cString: $0) } ?? "").isEmpty == false
    }

    package func ready(status: String) { send("READY=1\nSTATUS=\(oneLine(status))") }
    package func status(_ status: String) { send("STATUS=\(oneLine(status))") }
    package func stopping() { send("STOPPING=1\nSTATUS=stopping") }
    package func watchdog() { send("WATCHDOG=1") }

    /// Before a reload: systemd wants the monotonic time with it.
    package func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        send("RELOADING=1\nMONOTONIC_USEC=\(microseconds)\nSTATUS=reloading")
    }

    /// The watchdog interval systemd asked for, if any (`WATCHDOG_USEC`
    /// for this process).
    package var watchdogMicroseconds: UInt64? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return microseconds
    }

    private func send(_ state: String) {
        _ = sd_notify(0, state)
    }

    private func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
