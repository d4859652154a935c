import Glibc

// Plain POSIX Unix stream sockets with blocking I/O and a tiny line reader:
// no NIO and no MediatorClient, so that the broker's own cost shows.

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    static func sys(_ what: String, _ code: Int32 = errno) -> BenchError {
        BenchError("\(what): \(String(cString: strerror(code)))")
    }
}

enum UnixSocket {
    private static func withAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) throws -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { throw BenchError("socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    private static func newSocket() throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError.sys("socket") }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    static func connect(path: String) throws -> Int32 {
        let fd = try newSocket()
        let rc = try withAddress(path) { Glibc.connect(fd, $0, $1) }
        guard rc == 0 else {
            let code = errno
            close(fd)
            throw BenchError.sys("connect \(path)", code)
        }
        return fd
    }

    static func listen(path: String, backlog: Int32 = 128) throws -> Int32 {
        unlink(path)
        let fd = try newSocket()
        let rc = try withAddress(path) { bind(fd, $0, $1) }
        guard rc == 0, Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            throw BenchError.sys("bind/listen \(path)", code)
        }
        return fd
    }

    static func accept(_ listener: Int32) throws -> Int32 {
        while true {
            let fd = Glibc.accept(listener, nil, nil)
            if fd >= 0 {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                return fd
            }
            if errno == EINTR { continue }
            throw BenchError.sys("accept")
        }
    }

    /// Makes a blocking `read` fail with EAGAIN after `seconds` without data.
    static func setReceiveTimeout(_ fd: Int32, seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1_000_000))
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }
}

/// One connected socket plus a hand-rolled buffer that splits LF-ended lines.
/// A line handed out stays valid until the next read call on this object.
final class RawLineSocket {
    let fd: Int32
    private let buffer: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private var start = 0
    private var end = 0

    init(fd: Int32, capacity: Int = 1 << 20) {
        self.fd = fd
        self.capacity = capacity
        self.buffer = .allocate(capacity: capacity)
    }

    deinit {
        buffer.deallocate()
        close(fd)
    }

    /// Next non-empty line, without LF (and without a CR before it); nil at end of stream.
    func readLine() throws -> UnsafeRawBufferPointer? {
        while true {
            if let line = nextBufferedLine() { return line }
            guard try fill() else { return nil }
        }
    }

    /// Blocks until at least one complete line is buffered, then hands every
    /// buffered complete line to `body`. Returns how many, or nil at end of stream.
    func readAvailableLines(_ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int? {
        var count = 0
        while true {
            while let line = nextBufferedLine() {
                try body(line)
                count += 1
            }
            if count > 0 { return count }
            guard try fill() else { return nil }
        }
    }

    func writeAll(_ bytes: UnsafeRawPointer, count: Int) throws {
        var done = 0
        while done < count {
            let n = write(fd, bytes + done, count - done)
            if n > 0 {
                done += n
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw BenchError("write timed out")
            } else {
                throw BenchError.sys("write")
            }
        }
    }

    func writeAll(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try writeAll($0.baseAddress!, count: $0.count) }
    }

    func writeAll(_ out: ByteBuffer) throws {
        try writeAll(out.base, count: out.count)
    }

    private func nextBufferedLine() -> UnsafeRawBufferPointer? {
        while start < end {
            guard let hit = memchr(buffer + start, 0x0A, end - start) else { return nil }
            let newline = hit.assumingMemoryBound(to: UInt8.self) - buffer
            var length = newline - start
            if length > 0 && buffer[start + length - 1] == 0x0D { length -= 1 }
            let lineStart = start
            start = newline + 1
            if length == 0 { continue }  // empty lines are ignored
            return UnsafeRawBufferPointer(start: buffer + lineStart, count: length)
        }
        return nil
    }

    /// One blocking read. False at end of stream.
    private func fill() throws -> Bool {
        if start == end {
            start = 0
            end = 0
        } else if start > 0 {
            memmove(buffer, buffer + start, end - start)
            end -= start
            start = 0
        }
        guard end < capacity else { throw BenchError("line longer than \(capacity) bytes") }
        while true {
            let n = read(fd, buffer + end, capacity - end)
            if n > 0 {
                end += n
                return true
            }
            if n == 0 { return false }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { throw BenchError("read timed out") }
            throw BenchError.sys("read")
        }
    }
}

/// A growable output buffer of raw bytes; reused between writes.
final class ByteBuffer {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int = 64 * 1024) {
        self.capacity = capacity
        self.base = .allocate(capacity: capacity)
    }

    deinit { base.deallocate() }

    func removeAll() { count = 0 }

    private func reserve(_ extra: Int) {
        guard count + extra > capacity else { return }
        var newCapacity = capacity * 2
        while newCapacity < count + extra { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        reserve(bytes.count)
        if let source = bytes.baseAddress {
            (base + count).update(from: source.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        }
        count += bytes.count
    }

    func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    func append(decimal value: Int) {
        reserve(20)
        var v = value
        if v < 0 {
            base[count] = UInt8(ascii: "-")
            count += 1
            v = -v
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = 0
        withUnsafeMutableBytes(of: &digits) { d in
            repeat {
                d[n] = UInt8(truncatingIfNeeded: 48 + v % 10)
                v /= 10
                n += 1
            } while v > 0
            for i in 0..<n { base[count + i] = d[n - 1 - i] }
        }
        count += n
    }
}
