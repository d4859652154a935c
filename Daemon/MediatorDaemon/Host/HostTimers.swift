import MediatorEventLoop
import NIOCore

/// The host's timers: the broker's wake-up (call deadlines, component
/// idle times), and memory trimming every ``trimInterval`` while the daemon
/// has had connections. Confined to the loop's thread.
final class HostTimers {
    private let loop: SDEventLoop
    private let expire: () -> Void
    private let trim: () -> Void
    private var wakeUpTimer: TimerSource?
    private var trimTimer: TimerSource?
    /// The most connections and calls at once since the last trim.
    private var loadHighWater = 0
    static let trimInterval: Duration = .seconds(5)

    init(loop: SDEventLoop, expire: @escaping () -> Void, trim: @escaping () -> Void) throws(SDEventError) {
        self.loop = loop
        self.expire = expire
        self.trim = trim
    }

    deinit {
        wakeUpTimer?.cancel()
        trimTimer?.cancel()
    }

    /// Calls `expire` at `deadline` (replaces the time asked for before).
    func wakeUp(at deadline: NIODeadline) {
        let instant = MonotonicInstant(microseconds: deadline.uptimeNanoseconds / 1000)
        if let wakeUpTimer {
            try? wakeUpTimer.rearm(at: instant)
        } else {
            wakeUpTimer = try? loop.addTimer(at: instant) { [unowned self] _, _ in expire() }
        }
    }

    func connectionOpened(load: Int) {
        loadHighWater = max(loadHighWater, load)
        guard trimTimer == nil else { return }
        trimTimer = try? loop.addRepeatingTimer(every: Self.trimInterval, accuracy: .milliseconds(250)) { [unowned self] _, _ in trim() }
    }

    func stopTrimming() {
        trimTimer?.cancel()
        trimTimer = nil
    }

    /// Whether malloc's free pages are worth returning: a table shrank, or
    /// the load fell below half its high-water mark (of at least 256).
    func shouldTrim(shrank: Bool, load: Int) -> Bool {
        loadHighWater = max(loadHighWater, load)
        guard shrank || (loadHighWater >= 256 && load * 2 < loadHighWater) else { return false }
        loadHighWater = load
        return true
    }
}
