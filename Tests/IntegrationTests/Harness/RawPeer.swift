import Foundation
import MediatorProtocol

#if canImport(Glibc)
import Glibc
#endif

/// A peer that speaks the wire protocol by hand over its own POSIX Unix
/// socket: one compact JSON object per line, every read bounded by poll(2).
///
/// Not thread-safe: one thread uses a peer at a time. The socket is
/// close-on-exec (children started meanwhile do not inherit it) and writes
/// use MSG_NOSIGNAL (a closed peer is an error, not SIGPIPE).
final class RawPeer: @unchecked Sendable {
    let path: String
    private var fd: Int32
    private var buffer: [UInt8] = []
    /// Messages read while looking for another one, handed out first.
    private var stash: [JSONValue] = []
    private var nextID: Int64 = 1
    static let defaultBound: Duration = .seconds(10)

    /// One connection attempt; throws when nobody accepts.
    init(path: String) throws {
        // The socket is stored only once connected: when an initializer
        // throws after every property is set, `deinit` still runs, and
        // would close the number a second time, by then perhaps another
        // thread's descriptor (an event loop's socket, which then fails EBADF).
        let address = try UnixAddress(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(String(cString: strerror(errno)))") }
        guard address.connect(fd) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw HarnessError("connect \(path): \(reason)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        self.path = path
        self.fd = fd
    }

    /// Takes over a connected socket that another process opened (one made
    /// as another uid, see ``OtherUser/connections(_:count:)``).
    init(adopting fd: Int32, path: String) {
        self.path = path
        self.fd = fd
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// Connects, retrying every 20 ms until `bound` passes.
    static func connect(_ path: String, within bound: Duration = .seconds(10)) throws -> RawPeer {
        var peer: RawPeer?
        var lastError: (any Error)?
        try waitUntil("a connection to \(path) (last error: \(lastError.map { "\($0)" } ?? "none"))", within: bound) {
            do {
                peer = try RawPeer(path: path)
                return true
            } catch {
                lastError = error
                return false
            }
        }
        return peer!
    }

    deinit { close() }

    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    /// Half-closes the writing side (the daemon sees end of stream).
    func shutdownWrite() { _ = shutdown(fd, Int32(SHUT_WR)) }

    // MARK: - Writing

    func write(_ bytes: [UInt8], within bound: Duration = RawPeer.defaultBound) throws {
        guard fd >= 0 else { throw HarnessError("write on a closed peer") }
        let deadline = ContinuousClock.now + bound
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if count > 0 {
                offset += count
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                try poll(events: Int16(POLLOUT), until: deadline, what: "room to write")
                continue
            }
            throw HarnessError("write: \(String(cString: strerror(errno)))")
        }
    }

    func send(_ message: JSONValue) throws {
        try write(message.encoded + [0x0A])
    }

    func sendLine(_ text: String) throws {
        try write(Array(text.utf8) + [0x0A])
    }

    /// Sends a request; returns its id.
    @discardableResult
    func request(
        _ target: String, _ action: String, params: JSONValue? = nil, id: JSONValue? = nil,
        timeoutMs: Int? = nil, more: Bool = false, extra: [String: JSONValue] = [:]
    ) throws -> JSONValue {
        let requestID = id ?? .int(takeID())
        var members: [String: JSONValue] = ["id": requestID, "target": .string(target), "action": .string(action)]
        if let params { members["params"] = params }
        if let timeoutMs { members["timeout_ms"] = .int(Int64(timeoutMs)) }
        if more { members["more"] = true }
        for (key, value) in extra { members[key] = value }
        try send(.object(members))
        return requestID
    }

    func takeID() -> Int64 {
        defer { nextID += 1 }
        return nextID
    }

    // MARK: - Reading

    private func poll(events: Int16, until deadline: ContinuousClock.Instant, what: String) throws {
        while true {
            let remaining = deadline - ContinuousClock.now
            if remaining <= .zero { throw HarnessError("timed out waiting for \(what) on \(path)") }
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let milliseconds = Int32(clamping: max(1, remaining.milliseconds))
            let result = Glibc.poll(&descriptor, 1, milliseconds)
            if result > 0 { return }
            if result < 0 && errno != EINTR { throw HarnessError("poll: \(String(cString: strerror(errno)))") }
        }
    }

    /// The next line (without its LF or CR), empty lines skipped.
    func readLine(within bound: Duration = RawPeer.defaultBound) throws -> [UInt8] {
        guard fd >= 0 else { throw HarnessError("read on a closed peer") }
        let deadline = ContinuousClock.now + bound
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                var line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                if line.last == 0x0D { line.removeLast() }
                if line.isEmpty { continue }
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress!, $0.count, 0) }
            if count > 0 {
                buffer.append(contentsOf: chunk[..<count])
                continue
            }
            if count == 0 { throw PeerClosed(path: path, pending: buffer.count) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                try poll(events: Int16(POLLIN), until: deadline, what: "a message")
                continue
            }
            throw HarnessError("read: \(String(cString: strerror(errno)))")
        }
    }

    struct PeerClosed: Error, CustomStringConvertible {
        var path: String
        var pending: Int
        var description: String { "the daemon closed the connection on \(path) (\(pending) unread bytes)" }
    }

    /// The next message, stashed ones first.
    func receive(within bound: Duration = RawPeer.defaultBound) throws -> JSONValue {
        if !stash.isEmpty { return stash.removeFirst() }
        let line = try readLine(within: bound)
        do {
            return try JSONParser.parse(line)
        } catch {
            throw HarnessError("not JSON from the daemon: \(String(decoding: line, as: UTF8.self)) (\(error))")
        }
    }

    /// The next message that `matches`; the others are kept, in order, for
    /// later reads.
    func receive(
        within bound: Duration = RawPeer.defaultBound, where matches: (JSONValue) -> Bool
    ) throws -> JSONValue {
        if let index = stash.firstIndex(where: matches) { return stash.remove(at: index) }
        let deadline = ContinuousClock.now + bound
        var skipped: [JSONValue] = []
        defer { stash.append(contentsOf: skipped) }
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw HarnessError("timed out waiting for a matching message on \(path); skipped: \(skipped.map(\.jsonText))") }
            let line = try readLine(within: remaining)
            let message = try JSONParser.parse(line)
            if matches(message) { return message }
            skipped.append(message)
        }
    }

    /// The response (a message with `result` or `error`) with id `id`.
    func response(to id: JSONValue, within bound: Duration = RawPeer.defaultBound) throws -> JSONValue {
        try receive(within: bound) { $0.isResponse && $0["id"] == id }
    }

    /// The next event named `name`.
    func event(_ name: String, within bound: Duration = RawPeer.defaultBound) throws -> JSONValue {
        try receive(within: bound) { $0["event"]?.stringValue == name }
    }

    /// The next request (a message with `target` and `action`).
    func incomingRequest(within bound: Duration = RawPeer.defaultBound) throws -> JSONValue {
        try receive(within: bound) { $0["target"] != nil && $0["action"] != nil }
    }

    /// Sends a request and returns its response.
    func call(
        _ target: String, _ action: String, params: JSONValue? = nil, timeoutMs: Int? = nil,
        within bound: Duration = RawPeer.defaultBound
    ) throws -> JSONValue {
        let id = try request(target, action, params: params, timeoutMs: timeoutMs)
        return try response(to: id, within: bound)
    }

    /// A call that must succeed: its result.
    func result(
        _ target: String, _ action: String, params: JSONValue? = nil, timeoutMs: Int? = nil,
        within bound: Duration = RawPeer.defaultBound
    ) throws -> JSONValue {
        let reply = try call(target, action, params: params, timeoutMs: timeoutMs, within: bound)
        guard let result = reply["result"] else { throw HarnessError("\(target)/\(action) failed: \(reply.jsonText)") }
        return result
    }

    /// Registers a target on this connection (a raw component).
    func register(_ target: String, actions: [JSONValue], mode: String? = nil) throws -> JSONValue {
        var params: [String: JSONValue] = ["target": .string(target), "actions": .array(actions)]
        if let mode { params["mode"] = .string(mode) }
        return try result("mediator", "register", params: .object(params))
    }

    /// Answers a request that this peer received.
    func reply(to request: JSONValue, result: JSONValue) throws {
        try send(["id": request["id"] ?? .null, "result": result])
    }

    func reply(to request: JSONValue, error code: String, message: String) throws {
        try send(["id": request["id"] ?? .null, "error": ["code": .string(code), "message": .string(message)]])
    }

    /// Nothing unread is pending: checked by a ping round trip (the ping's
    /// reply must be the very next message), not by waiting for silence.
    func expectNothingPendingBeforePing(within bound: Duration = RawPeer.defaultBound) throws {
        let id = try request("mediator", "ping", id: .string("sentinel-\(takeID())"))
        let next = try receive(within: bound)
        guard next["id"] == id, next["result"] != nil else {
            throw HarnessError("expected only the ping reply \(id.jsonText), got \(next.jsonText)")
        }
    }
}

extension JSONValue {
    /// Whether this message is a response.
    var isResponse: Bool { self["result"] != nil || self["error"] != nil }

    /// The `error.code` of a response.
    var errorCode: String? { self["error"]?["code"]?.stringValue }
}
