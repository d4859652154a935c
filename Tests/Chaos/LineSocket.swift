import ChildProcesses
import Glibc
import MediatorProtocol
import MediatorSocket

// Unix stream sockets with no library between the wire and the checks:
// the clients speak the wire protocol by hand, so that every byte the daemon
// sends is seen and checked, with no library in between to hide a duplicate
// or a stray line. MediatorSocket's UnixStreamSocket does only the syscalls
// (recvmsg/sendmsg with SCM_RIGHTS, contract section 8).

/// One connection with a line buffer. Writes block (at most
/// `sendTimeoutSeconds`, waiting with poll); reads never block:
/// `readAvailable` takes what the kernel has, for a caller that polls.
/// Descriptors that arrive wait in order in `arrivedDescriptors` until a
/// line that declares `fds` takes them (`takeDescriptors`).
final class LineSocket {
    let fd: Int32
    private let socket: UnixStreamSocket
    private let sendTimeoutMs: Int32
    private var pending: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    private(set) var isClosed = false
    /// Descriptors received and not yet taken by a line, oldest first.
    private(set) var arrivedDescriptors: [OwnedDescriptor] = []

    private init(socket: UnixStreamSocket, sendTimeoutSeconds: Int) throws {
        guard let raw = socket.descriptor.rawValue else { throw ChaosFailure("a socket without a descriptor") }
        self.socket = socket
        self.fd = raw
        self.sendTimeoutMs = Int32(sendTimeoutSeconds * 1000)
    }

    deinit { close() }

    static func connect(path: String, sendTimeoutSeconds: Int = 5) throws -> LineSocket {
        do {
            return try LineSocket(socket: try UnixStreamSocket.connect(path: path), sendTimeoutSeconds: sendTimeoutSeconds)
        } catch let error as SocketError {
            throw ChaosFailure("connect \(path): \(error)")
        }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        try? socket.close()
        arrivedDescriptors.removeAll()  // OwnedDescriptor closes on release
    }

    func send(_ message: JSONValue, descriptors: [OwnedDescriptor] = []) throws {
        var bytes = message.encoded
        bytes.append(0x0A)
        try writeAll(bytes, descriptors: descriptors)
    }

    /// Writes all of `bytes`, `descriptors` with the first of them (they
    /// are borrowed: the caller closes its copies after).
    func writeAll(_ bytes: [UInt8], descriptors: [OwnedDescriptor] = []) throws {
        var done = 0
        var riding = descriptors
        while done < bytes.count {
            let outcome: SendOutcome
            do {
                outcome = try bytes.withUnsafeBytes { raw throws(SocketError) in
                    try socket.send(UnsafeRawBufferPointer(rebasing: raw[done...]), descriptors: riding)
                }
            } catch {
                throw ChaosFailure("write: \(error)")
            }
            switch outcome {
            case .sent(let count):
                done += count
                riding = []
            case .wouldBlock:
                var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&poller, 1, sendTimeoutMs)
                if ready == 0 { throw ChaosFailure("write to the daemon blocked for \(sendTimeoutMs / 1000) s: it does not read") }
                if ready < 0 && errno != EINTR { throw ChaosFailure.sys("poll") }
            }
        }
    }

    /// Reads what is available without blocking and hands each complete
    /// non-empty line (without LF, or CR LF) to `body`. Returns false at end
    /// of stream.
    func readAvailable(_ body: ([UInt8]) -> Void) throws -> Bool {
        while true {
            let outcome: ReceiveOutcome
            do {
                outcome = try chunk.withUnsafeMutableBytes { raw throws(SocketError) in try socket.receive(into: raw) }
            } catch {
                throw ChaosFailure("read: \(error)")
            }
            switch outcome {
            case .received(let count, let descriptors, let truncated):
                if truncated { throw ChaosFailure("read: descriptors truncated (MSG_CTRUNC)") }
                arrivedDescriptors += descriptors
                pending.append(contentsOf: chunk[0..<count])
                // A read ends after bytes that carried descriptors: split
                // now, so that their line takes them before later ones arrive.
                splitLines(body)
                if count < chunk.count { return true }
            case .wouldBlock:
                splitLines(body)
                return true
            case .endOfStream:
                splitLines(body)
                return false
            }
        }
    }

    /// The first `count` descriptors that arrived and no line took yet;
    /// nil when fewer arrived (they stay).
    func takeDescriptors(_ count: Int) -> [OwnedDescriptor]? {
        guard count <= arrivedDescriptors.count else { return nil }
        let taken = Array(arrivedDescriptors.prefix(count))
        arrivedDescriptors.removeFirst(count)
        return taken
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
