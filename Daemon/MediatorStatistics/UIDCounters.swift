/// One uid's counted events; its connections, calls in flight and queued
/// bytes now are read from the broker at snapshot time.
public struct UIDCounters: Sendable, Equatable {
    public internal(set) var connectionsOpened = 0
    /// Refusals by quota name (`max_calls_in_flight_per_uid`, ...).
    public internal(set) var quotaRefusals: [String: Int] = [:]
    public internal(set) var policyDenials = 0

    public init() {}
}
