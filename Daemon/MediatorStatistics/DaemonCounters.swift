/// Daemon-wide events since start.
public struct DaemonCounters: Sendable, Equatable {
    public var connectionsOpened = 0
    /// Connections refused by a quota (`max_connections_per_uid`).
    public var connectionsRefused = 0
    public var registrations = 0
    /// Event patterns added by `subscribe`.
    public var subscriptions = 0
    /// Calls forwarded to a component (``ActionCounters/calls`` also counts held calls that never were).
    public var callsRouted = 0
    public var policyDenials = 0
    public var badFrames = 0
    /// Connections closed because what was queued toward them grew too large.
    public var backlogDisconnects = 0

    public init() {}
}
