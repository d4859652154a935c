import ChildProcesses
import Glibc
import MediatorProtocol

// Plain POSIX Unix stream sockets: the clients speak the wire protocol by
// hand, so that every byte the daemon sends is seen and checked, with no
// library in between to hide a duplicate or a stray line.

/// One connection with a line buffer. Writes block (bounded by
/// SO_SNDTIMEO); reads never block: `readAvailable` takes what the kernel
/// has, for a caller that polls.
final class LineSocket {
    let fd: Int32
    private var pending: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    private(set) var isClosed = false

    private init(fd: Int32) { self.fd = fd }

    deinit { close() }

    static func connect(path: String, sendTimeoutSeconds: Int = 5) throws -> LineSocket {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ChaosFailure.sys("socket") }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            Glibc.close(fd)
            throw ChaosFailure("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            let code = errno
            Glibc.close(fd)
            throw ChaosFailure.sys("connect \(path)", code)
        }
        var tv = timeval(tv_sec: sendTimeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        return LineSocket(fd: fd)
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }

    func send(_ message: JSONValue) throws {
        var bytes = message.encoded
        bytes.append(0x0A)
        try writeAll(bytes)
    }

    func writeAll(_ bytes: [UInt8]) throws {
        var done = 0
        try bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            while done < raw.count {
                let n = write(fd, base + done, raw.count - done)
                if n > 0 {
                    done += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    throw ChaosFailure("write to the daemon blocked for 5 s: it does not read")
                } else {
                    throw ChaosFailure.sys("write")
                }
            }
        }
    }

    /// Reads what is available without blocking and hands each complete
    /// non-empty line (without LF, or CR LF) to `body`. Returns false at end
    /// of stream.
    func readAvailable(_ body: ([UInt8]) -> Void) throws -> Bool {
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                pending.append(contentsOf: chunk[0..<n])
                if n < chunk.count { break }
                continue
            }
            if n == 0 { splitLines(body); return false }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { break }
            throw ChaosFailure.sys("read")
        }
        splitLines(body)
        return true
    }

    private func splitLines(_ body: ([UInt8]) -> Void) {
        var start = 0
        while let newline = pending[start...].firstIndex(of: 0x0A) {
            var end = newline
            if end > start && pending[end - 1] == 0x0D { end -= 1 }
            if end > start { body(Array(pending[start..<end])) }
            start = newline + 1
        }
        if start > 0 { pending.removeFirst(start) }
    }

    /// Bytes of a line begun but not ended.
    var unfinishedBytes: Int { pending.count }

    /// A blocking request and its final response, for the run's own control
    /// calls (ping, list, status, start); other lines are skipped. Throws
    /// after `seconds`.
    func call(_ target: String, _ action: String, params: JSONValue = .object([:]), id: Int64,
              seconds: Double = 5) throws -> JSONValue {
        try send(["id": .int(id), "target": .string(target), "action": .string(action), "params": params])
        let deadline = monotonicNanos() + UInt64(seconds * 1e9)
        var answer: JSONValue?
        while answer == nil {
            let now = monotonicNanos()
            guard now < deadline else { throw ChaosFailure("\(target)/\(action): no answer within \(seconds) s") }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min((deadline - now) / 1_000_000 + 1, 200)))
            if ready < 0 && errno != EINTR { throw ChaosFailure.sys("poll") }
            if ready <= 0 { continue }
            let open = try readAvailable { line in
                guard answer == nil, let message = try? JSONParser.parse(line), message["id"] == .int(id),
                    message["continues"] != .bool(true)
                else { return }
                answer = message
            }
            if !open && answer == nil { throw ChaosFailure("\(target)/\(action): the daemon closed the connection") }
        }
        return answer ?? .null
    }

    /// Like `call`, but returns the result and throws the error response.
    func result(_ target: String, _ action: String, params: JSONValue = .object([:]), id: Int64,
                seconds: Double = 5) throws -> JSONValue {
        let answer = try call(target, action, params: params, id: id, seconds: seconds)
        if let result = answer["result"] { return result }
        throw ChaosFailure("\(target)/\(action) failed: \(answer["error"]?.jsonText ?? answer.jsonText)")
    }
}
