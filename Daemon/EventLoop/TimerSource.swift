import CSystemd
import Glibc

/// A timer on CLOCK_MONOTONIC: one-shot at an absolute deadline (re-armable
/// with `rearm`, same source, nothing allocated), or repeating at an interval.
package final class TimerSource: EventSource {
    /// Runs on the loop's thread with the source and the deadline it was set to.
    package typealias Handler = (TimerSource, MonotonicInstant) -> Void

    /// How late sd-event may fire a timer when none is given: sd-event's own
    /// default (250 ms, for coalescing wake-ups) is too coarse for call
    /// deadlines; 1 ms keeps them within a millisecond and still lets timers
    /// that close together share a wake-up.
    package static let defaultAccuracy: Duration = .milliseconds(1)

    /// For a repeating timer, its period; nil for a one-shot timer.
    package let interval: Duration?
    private let handler: Handler

    fileprivate init(interval: Duration?, handler: @escaping Handler) {
        self.interval = interval
        self.handler = handler
    }

    /// The deadline the timer is set to.
    package func deadline() throws(SDEventError) -> MonotonicInstant {
        var microseconds: UInt64 = 0
        try check("sd_event_source_get_time", sd_event_source_get_time(try live(), &microseconds))
        return MonotonicInstant(microseconds: microseconds)
    }

    /// Sets the deadline and enables the timer again (a fired or disabled
    /// one-shot timer fires once more; a repeating one continues from there).
    package func rearm(at deadline: MonotonicInstant) throws(SDEventError) {
        let source = try live()
        try check("sd_event_source_set_time", sd_event_source_set_time(source, Self.sdTime(deadline)))
        try setEnablement(interval == nil ? .oneShot : .on)
    }

    package func rearm(after delay: Duration) throws(SDEventError) {
        try rearm(at: MonotonicInstant.now().advanced(by: delay))
    }

    /// Stops the timer until the next `rearm`; the source stays allocated.
    package func disarm() throws(SDEventError) {
        try setEnablement(.off)
    }

    /// How late the timer may fire (timer slack): sd-event moves the wake-up
    /// within this window to share it with other timers.
    package func setAccuracy(_ accuracy: Duration) throws(SDEventError) {
        try check("sd_event_source_set_time_accuracy",
                  sd_event_source_set_time_accuracy(try live(), Self.sdAccuracy(accuracy)))
    }

    fileprivate func fire(_ microseconds: UInt64) {
        let deadline = MonotonicInstant(microseconds: microseconds)
        if let interval {
            // The next deadline counts from this one, not from now, so the
            // period does not drift; after a stall (the next deadline already
            // past) it restarts from now rather than firing in a burst.
            var next = deadline.advanced(by: interval)
            let now = MonotonicInstant.now()
            if next <= now { next = now.advanced(by: interval) }
            if let source = pointer { _ = sd_event_source_set_time(source, Self.sdTime(next)) }
        }
        handler(self, deadline)
    }

    /// sd-event reads UINT64_MAX as "never": keep a real deadline below it.
    fileprivate static func sdTime(_ instant: MonotonicInstant) -> UInt64 {
        min(instant.microseconds, UInt64.max - 1)
    }

    /// sd-event reads 0 as "the default" (250 ms): the finest is 1 µs.
    fileprivate static func sdAccuracy(_ accuracy: Duration) -> UInt64 {
        max(accuracy.microsecondsOrZero, 1)
    }
}

extension SDEventLoop {
    /// Calls HANDLER once at DEADLINE (or as soon as the loop runs, if it has
    /// passed), at most ACCURACY late. `rearm` sets it again.
    package func addTimer(
        at deadline: MonotonicInstant, accuracy: Duration = TimerSource.defaultAccuracy,
        handler: @escaping TimerSource.Handler
    ) throws(SDEventError) -> TimerSource {
        try addTimer(at: deadline, interval: nil, accuracy: accuracy, handler: handler)
    }

    package func addTimer(
        after delay: Duration, accuracy: Duration = TimerSource.defaultAccuracy,
        handler: @escaping TimerSource.Handler
    ) throws(SDEventError) -> TimerSource {
        try addTimer(at: MonotonicInstant.now().advanced(by: delay), interval: nil, accuracy: accuracy, handler: handler)
    }

    /// Calls HANDLER every INTERVAL (> 0), the first time one INTERVAL from now.
    package func addRepeatingTimer(
        every interval: Duration, accuracy: Duration = TimerSource.defaultAccuracy,
        handler: @escaping TimerSource.Handler
    ) throws(SDEventError) -> TimerSource {
        guard interval.microsecondsOrZero > 0 else { throw SDEventError("sd_event_add_time", errno: EINVAL) }
        let source = try addTimer(
            at: MonotonicInstant.now().advanced(by: interval), interval: interval, accuracy: accuracy, handler: handler)
        try source.setEnablement(.on)
        return source
    }

    private func addTimer(
        at deadline: MonotonicInstant, interval: Duration?, accuracy: Duration,
        handler: @escaping TimerSource.Handler
    ) throws(SDEventError) -> TimerSource {
        assertConfined()
        let source = TimerSource(interval: interval, handler: handler)
        try EventSource.register(source, census: census, "sd_event_add_time") { pointer, userdata in
            sd_event_add_time(
                event, pointer, CLOCK_MONOTONIC, TimerSource.sdTime(deadline), TimerSource.sdAccuracy(accuracy),
                { _, microseconds, userdata in
                    SourceBox<TimerSource>.source(of: userdata)?.fire(microseconds)
                    return 0
                }, userdata)
        }
        return source
    }
}
