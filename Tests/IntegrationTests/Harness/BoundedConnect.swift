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
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw HarnessError("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        while true {
            let fd = socket(
                AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
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
