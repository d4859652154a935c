import Glibc
import MediatorEventLoop

extension SDEventLoop {
    /// Runs iterations until CONDITION holds; false if it does not within BOUND.
    func run(until condition: () -> Bool, within bound: Duration = .seconds(10)) throws -> Bool {
        let deadline = MonotonicInstant.now().advanced(by: bound)
        while !condition() {
            let now = MonotonicInstant.now()
            guard now < deadline else { return false }
            try runOnce(timeout: deadline.duration(since: now))
        }
        return true
    }

    /// Dispatches what is ready now, without waiting: for "nothing fires".
    func dispatchReady() throws {
        try runOnce(timeout: .zero)
    }
}

/// A connected pair of non-blocking Unix stream sockets, closed on deinit.
final class SocketPair {
    let a: Int32
    let b: Int32

    init() throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0
        else { throw SDEventError("socketpair", errno: errno) }
        a = fds[0]
        b = fds[1]
    }

    deinit {
        close(a)
        close(b)
    }

    /// Writes BYTES to FD; the count written.
    @discardableResult
    static func write(_ fd: Int32, _ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    /// What FD has to read now (up to 64 KiB), empty if nothing.
    static func read(_ fd: Int32) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        return count > 0 ? Array(buffer[0..<count]) : []
    }

    /// Writes to FD until the kernel refuses (EAGAIN); the bytes written.
    static func fill(_ fd: Int32) -> Int {
        let chunk = [UInt8](repeating: 7, count: 65536)
        var total = 0
        while true {
            let count = write(fd, chunk)
            guard count > 0 else { return total }
            total += count
        }
    }

    /// Reads FD until nothing is left; the bytes read.
    static func drain(_ fd: Int32) -> Int {
        var total = 0
        while true {
            let count = read(fd).count
            guard count > 0 else { return total }
            total += count
        }
    }
}
