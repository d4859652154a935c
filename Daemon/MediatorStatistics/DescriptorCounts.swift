/// The file descriptors the daemon's host has handled (contract section 8),
/// as it counts them: the broker core sees only handles, so the host reports
/// these for `mediator/stats`, `mediatorctl top` and the metrics.
package struct DescriptorCounts: Sendable, Equatable {
    /// Received with messages since the start.
    package var received: Int
    /// Closed undelivered since the start: refused, or their call ended
    /// (caller gone, timeout, cancel), or their receiver left before they
    /// were written.
    package var released: Int
    /// Held by the daemon now: received and not yet written to their
    /// receiver nor closed.
    package var inFlight: Int
    /// ``inFlight`` by the uid that sent them (what the quota
    /// `max_fds_in_flight_per_uid` reads).
    package var inFlightByUID: [UInt32: Int]

    package init(received: Int = 0, released: Int = 0, inFlight: Int = 0, inFlightByUID: [UInt32: Int] = [:]) {
        self.received = received
        self.released = released
        self.inFlight = inFlight
        self.inFlightByUID = inFlightByUID
    }

    /// Written to their receiver: every one received that is neither
    /// closed undelivered nor still held.
    package var passed: Int { max(0, received - released - inFlight) }
}
