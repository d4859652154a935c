/// A managed component's life since the daemon started.
package struct ComponentCounters: Sendable, Equatable {
    /// Why a start did not end in a registration.
    package enum StartFailure: String, Sendable, CaseIterable {
        /// The process ended before it registered.
        case exited
        /// It did not register within `start_timeout_s`.
        case startTimeout = "start_timeout"
        /// systemd could not start its unit.
        case unitFailed = "unit_failed"
    }

    /// Starts the daemon asked for (first starts and starts again after an exit or idle stop).
    package internal(set) var activations = 0
    package internal(set) var startFailures: [StartFailure: Int] = [:]
    /// Replacements scheduled after an instance ended (restart policy).
    package internal(set) var restarts = 0
    /// Stops because the component was idle (`idle_exit_s`).
    package internal(set) var idleExits = 0

    package init() {}

    /// Counts as a snapshot of the daemon's state carried them.
    package init(activations: Int, startFailures: [StartFailure: Int], restarts: Int, idleExits: Int) {
        (self.activations, self.startFailures, self.restarts, self.idleExits) = (activations, startFailures, restarts, idleExits)
    }
}
