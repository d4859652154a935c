/// How the launcher tells the server, at SIGTERM, whether the daemon is
/// being restarted (a new daemon follows at once, so everything may be
/// handed to it through the fd store) or stopped (peers must see the stop).
/// Under systemd it asks for the unit's job (Daemon/Systemd/UnitJob.swift);
/// the server knows nothing of systemd.
package struct RestartProbe: Sendable {
    package enum Verdict: Sendable, Equatable {
        /// A restart: what says so (e.g. the job type), for the log.
        case restart(String)
        /// A stop, or no way to tell (treated as a stop): why, for the log.
        case stop(String)
    }

    package var check: @Sendable () async -> Verdict

    package init(check: @escaping @Sendable () async -> Verdict) {
        self.check = check
    }
}
