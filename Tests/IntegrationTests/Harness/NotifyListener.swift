import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A datagram socket standing in for systemd's `NOTIFY_SOCKET`: collects
/// what the daemon tells the service manager (READY=1, STATUS=, ...).
final class NotifyListener {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        // Stored only once bound: `deinit` runs when an initializer throws
        // after every property is set, and would close the number twice.
        let address = try UnixAddress(path)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        guard address.bind(fd) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw HarnessError("bind \(path): \(reason)")
        }
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// The next datagram, within the bound.
    func next(within bound: Duration = .seconds(10)) throws -> String {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(bound.milliseconds)) == 1 else {
            throw HarnessError("no notification on \(path) within \(bound)")
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count >= 0 else { throw HarnessError("recv: \(String(cString: strerror(errno)))") }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// Reads notifications until one satisfies `matches`; returns it.
    func await(
        _ what: String, within bound: Duration = .seconds(10), _ matches: (String) -> Bool
    ) throws -> String {
        let deadline = ContinuousClock.now + bound
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw HarnessError("no \(what) notification within \(bound)") }
            let message = try next(within: remaining)
            if matches(message) { return message }
        }
    }
}
