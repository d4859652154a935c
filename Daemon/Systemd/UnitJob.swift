import CSystemd
import Glibc

/// Which job systemd runs for the daemon's own unit, asked over D-Bus at
/// SIGTERM: a restart may hand everything to the next daemon through the fd
/// store, a stop must not (issue 28). The daemon runs as an unprivileged
/// user, so it asks PID 1 over the system bus (root: systemd's private
/// socket, as ``UnitStarter`` does); a user instance asks its user manager.
package struct UnitJob: Sendable {
    package enum Verdict: Sendable, Equatable {
        /// The unit's job restarts it (its type, e.g. `restart`).
        case restart(jobType: String)
        /// Anything else: a stop job, no job, or no answer. Why, for the log.
        case stop(reason: String)
    }

    /// The job types after which a new daemon starts at once.
    static let restartTypes: Set<String> = ["restart", "try-restart", "reload-or-restart", "reload-or-try-restart"]

    package let bus: UnitStarter.Bus
    package let timeout: Duration

    package init(bus: UnitStarter.Bus, timeout: Duration = .seconds(2)) {
        self.bus = bus
        self.timeout = timeout
    }

    /// Blocks up to `timeout` (called once, at SIGTERM, off the broker's loop).
    package func verdict() -> Verdict {
        let bus: OpaquePointer
        switch UnitStarter.open(self.bus) {
        case .success(let opened): bus = opened
        case .failure(let failure): return .stop(reason: failure.description)
        }
        defer { sd_bus_flush_close_unref(bus) }
        let components = timeout.components
        let microseconds = UInt64(max(components.seconds, 0)) * 1_000_000
            + UInt64(max(components.attoseconds, 0) / 1_000_000_000_000)
        _ = sd_bus_set_method_call_timeout(bus, max(microseconds, 1))
        var jobType: UnsafeMutablePointer<CChar>?
        var message: UnsafeMutablePointer<CChar>?
        let result = mediator_unit_job_type(bus, UInt32(getpid()), &jobType, &message)
        defer {
            free(jobType)
            free(message)
        }
        guard result >= 0 else {
            let text = message.map { String(cString: $0) } ?? String(cString: strerror(-result))
            return .stop(reason: "systemd did not say which job the unit runs: \(text)")
        }
        guard let jobType else { return .stop(reason: "the unit has no job (the stop comes from outside systemd)") }
        let type = String(cString: jobType)
        return Self.restartTypes.contains(type) ? .restart(jobType: type) : .stop(reason: "the unit's job is \(type)")
    }
}
