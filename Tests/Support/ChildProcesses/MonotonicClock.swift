import Glibc

/// Nanoseconds on the monotonic clock. Inlinable: the bench's clients read
/// it around every timed call, where a call across modules would show.
@inlinable @inline(__always)
public func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}
