/// Daemon-wide events since start.
package struct DaemonCounters: Sendable, Equatable {
    package var connectionsOpened = 0
    /// Connections refused by a quota (`max_connections_per_uid`).
    package var connectionsRefused = 0
    package var registrations = 0
    /// Event patterns added by `subscribe`.
    package var subscriptions = 0
    /// Calls forwarded to a component (``ActionCounters/calls`` also counts held calls that never were).
    package var callsRouted = 0
    package var policyDenials = 0
    package var badFrames = 0
    /// Connections closed because what was queued toward them grew too large.
    package var backlogDisconnects = 0

    package init() {}
}
