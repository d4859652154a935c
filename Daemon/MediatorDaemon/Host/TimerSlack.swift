#if canImport(Glibc)
import Glibc
#endif

/// The kernel's timer slack for the calling thread. Linux may fire a normal
/// thread's timers up to 50 µs late to batch wake-ups. The broker's loop
/// runs short timers (call timeouts, and the dispatch's yield to reads when
/// it has no wake-up pipe), so its thread asks for exact ones. (`prctl` is
/// variadic, so Swift does not import it; it is looked up each call, which
/// happens once per loop.)
enum TimerSlack {
    private typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
    private static let PR_SET_TIMERSLACK: Int32 = 29

    /// Asks for 1 ns of slack on this thread; false where that is not possible.
    @discardableResult
    static func setMinimalForCurrentThread() -> Bool {
        #if os(Linux)
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "prctl") else { return false }
        let prctl = unsafeBitCast(symbol, to: Prctl.self)
        return prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0) == 0
        #else
        return false
        #endif
    }
}
