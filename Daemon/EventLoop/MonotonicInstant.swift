import Glibc

/// A point on CLOCK_MONOTONIC, in microseconds: sd-event's unit and clock for
/// every timer of this module. (Swift's ContinuousClock is CLOCK_BOOTTIME on
/// Linux, SuspendingClock has no package raw value: neither maps onto
/// sd-event's timestamps.)
package struct MonotonicInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Microseconds since the clock's origin (boot, not counting suspend).
    package var microseconds: UInt64

    package init(microseconds: UInt64) { self.microseconds = microseconds }

    /// The current time of CLOCK_MONOTONIC.
    package static func now() -> MonotonicInstant {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return MonotonicInstant(microseconds: UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000)
    }

    /// Later (or earlier) by DURATION, saturating at the clock's ends.
    package func advanced(by duration: Duration) -> MonotonicInstant {
        let delta = duration.signedMicroseconds
        if delta >= 0 {
            let (sum, overflow) = microseconds.addingReportingOverflow(UInt64(delta))
            return MonotonicInstant(microseconds: overflow ? UInt64.max - 1 : sum)
        }
        let magnitude = delta.magnitude
        return MonotonicInstant(microseconds: microseconds > magnitude ? microseconds - magnitude : 0)
    }

    /// The time from OTHER to this instant (negative when OTHER is later).
    package func duration(since other: MonotonicInstant) -> Duration {
        self >= other
            ? .microseconds(Int64(clamping: microseconds - other.microseconds))
            : .microseconds(-Int64(clamping: other.microseconds - microseconds))
    }

    package static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.microseconds < rhs.microseconds
    }

    package var description: String { "\(microseconds) µs (monotonic)" }
}

extension Duration {
    /// Whole microseconds, rounded towards zero, clamped to Int64.
    var signedMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        if overflow { return seconds < 0 ? Int64.min : Int64.max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000_000).partialValue
    }

    /// Whole microseconds, negative durations as zero.
    var microsecondsOrZero: UInt64 { UInt64(Swift.max(signedMicroseconds, 0)) }
}
