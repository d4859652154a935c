import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension RawPeer {
    /// Connects without ever blocking past `deadline`: a Unix socket's
    /// blocking connect(2) waits for as long as the listen backlog is full,
    /// which is for ever when the daemon has stopped accepting (out of file
    /// descriptors, or stuck). A non-blocking connect fails with EAGAIN then;
    /// it is retried every 5 ms until the deadline, then this throws.
    static func connect(_ path: String, by deadline: ContinuousClock.Instant) throws -> RawPeer {
        let address = try UnixAddress(path)
        while true {
            let fd = socket(
                AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
            let result = address.connect(fd)
            if result == 0 { return RawPeer(adopting: fd, path: path) }
            let failure = errno
            Glibc.close(fd)
            guard failure == EAGAIN || failure == EINTR else {
                throw HarnessError("connect \(path): \(String(cString: strerror(failure)))")
            }
            guard ContinuousClock.now < deadline else {
                throw HarnessError("connect \(path): the listen backlog stayed full (the daemon stopped accepting)")
            }
            sleep(for: .milliseconds(5))
        }
    }
}
