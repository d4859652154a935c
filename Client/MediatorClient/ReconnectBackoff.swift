/// The pauses between tries to connect to the daemon again: `initial`
/// doubling up to `maximum`; after ``restarting()`` (the daemon said
/// `mediator.restarting`: a daemon will listen again soon),
/// ``restartRetryInterval`` each for ``restartRetryWindow`` first, so that
/// the new daemon is found as soon as it accepts.
struct ReconnectBackoff {
    static let restartRetryInterval: Duration = .milliseconds(50)
    static let restartRetryWindow: Duration = .seconds(10)

    let initial: Duration
    let maximum: Duration
    private var delay: Duration
    private var quickUntil: ContinuousClock.Instant?

    init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = maximum
        self.delay = initial
    }

    /// Connected: the next loss starts the schedule again.
    mutating func reset() {
        delay = initial
        quickUntil = nil
    }

    mutating func restarting(now: ContinuousClock.Instant = .now) {
        quickUntil = now + Self.restartRetryWindow
    }

    /// The pause before the next try.
    mutating func next(now: ContinuousClock.Instant = .now) -> Duration {
        if let quickUntil, now < quickUntil { return Self.restartRetryInterval }
        defer { delay = min(delay * 2, maximum) }
        return delay
    }
}
