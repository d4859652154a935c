#if canImport(Glibc)
import Glibc
#endif

/// One file descriptor (on /dev/null) held back so that, once the process
/// has run out of them, the listener can still accept a waiting peer, tell
/// it `overloaded` and close it, instead of leaving it hanging in the
/// backlog (libuv does the same: `uv__emfile_trick`).
///
/// Confined to the listener's event loop: not thread-safe.
final class ReserveDescriptor {
    private var descriptor: Int32 = -1

    var isHeld: Bool { descriptor >= 0 }

    init() {
        restore()
    }

    deinit { release() }

    /// Opens the reserve again if it is not held; false when that fails
    /// (the files are still all in use: a later episode tries again).
    @discardableResult
    func restore() -> Bool {
        if descriptor < 0 { descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC) }
        return descriptor >= 0
    }

    func release() {
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
        }
    }

    /// Frees the reserve, accepts up to `maximum` peers waiting on
    /// `listener` (non-blocking) and sends each `line` then closes it, then
    /// takes the reserve back. Returns how many were refused. Best effort: a
    /// peer whose socket buffer is full misses the line but is still closed.
    func refuseWaiting(on listener: Int32, line: [UInt8], maximum: Int) -> Int {
        release()
        defer { restore() }
        var refused = 0
        while refused < maximum {
            // accept4 is not in Swift's Glibc import (_GNU_SOURCE); the
            // descriptor lives only until the close below.
            let peer = accept(listener, nil, nil)
            if peer < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break  // EAGAIN: nobody else waits; EMFILE: no reserve after all
            }
            _ = fcntl(peer, F_SETFD, FD_CLOEXEC)
            _ = line.withUnsafeBytes { bytes in
                send(peer, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            close(peer)
            refused += 1
        }
        return refused
    }
}
