/// One uid's counted events; its connections, calls in flight and queued
/// bytes now are read from the broker at snapshot time.
package struct UIDCounters: Sendable, Equatable {
    package internal(set) var connectionsOpened = 0
    /// Refusals by quota name (`max_calls_in_flight_per_uid`, ...).
    package internal(set) var quotaRefusals: [String: Int] = [:]
    package internal(set) var policyDenials = 0

    package init() {}

    /// Counts as a snapshot of the daemon's state carried them.
    package init(connectionsOpened: Int, quotaRefusals: [String: Int], policyDenials: Int) {
        (self.connectionsOpened, self.quotaRefusals, self.policyDenials) = (connectionsOpened, quotaRefusals, policyDenials)
    }
}
