import CSystemd
import Glibc

/// The service's file descriptor store (`FileDescriptorStoreMax=` in the
/// unit, `FDSTORE=1` through `sd_pid_notify_with_fds`): systemd keeps a
/// copy of each descriptor stored while the service runs or restarts, and
/// passes them to the next process with `LISTEN_FDS`/`LISTEN_FDNAMES`
/// under their names, so that a crash keeps the connections (issue 28).
package struct FileDescriptorStore: Sendable {
    package init() {}

    /// Stores `fd` under `name` (at most 255 bytes of `[A-Za-z0-9_.:-]`);
    /// false when systemd did not take it (no `NOTIFY_SOCKET`, or a failure).
    @discardableResult
    package func store(_ fd: Int32, name: String) -> Bool {
        var descriptor = fd
        return sd_pid_notify_with_fds(0, 0, "FDSTORE=1\nFDNAME=\(name)", &descriptor, 1) > 0
    }

    /// Drops the descriptor stored under `name`: without it systemd's copy
    /// would keep the connection open after the daemon closed its own.
    package func remove(name: String) {
        _ = sd_notify(0, "FDSTOREREMOVE=1\nFDNAME=\(name)")
    }
}

extension FileDescriptorStore {
    /// Waits, up to `timeout`, until systemd has handled every message sent
    /// before (`sd_notify_barrier`): a hand-over must be in the store before
    /// the process exits. False when it could not be confirmed.
    package func barrier(timeout: Duration = .seconds(5)) -> Bool {
        let components = timeout.components
        let microseconds = UInt64(max(components.seconds, 0)) * 1_000_000
            + UInt64(max(components.attoseconds, 0) / 1_000_000_000_000)
        return sd_notify_barrier(0, microseconds) >= 0
    }
}
