import Foundation
import Glibc

/// The `Bench` component: answers every request that has an `id` with
/// `{"id":<id>,"result":<params>}`, spliced from the request's bytes.
/// Brokered: one connection to mediatord, registered as `Bench` (or as
/// many targets as the target-scaling run asks for, all on that connection).
/// Direct: listens itself and serves each client connection on a thread.
enum EchoComponent {
    static let registerID = "bench-register"
    static let defaultTarget = "Bench"

    /// Serves one connection until it closes: one blocking read, every
    /// complete line answered, all answers in one write.
    static func serve(_ connection: RawLineSocket) throws {
        let out = ByteBuffer()
        let head = Array(#"{"id":"#.utf8)
        let middle = Array(#","result":"#.utf8)
        let tail = Array("}\n".utf8)
        let emptyObject = Array("{}".utf8)
        while true {
            out.removeAll()
            let lines = try connection.readAvailableLines { line in
                guard let members = LineJSON.scan(line), members.hasAction, let id = members.id else {
                    return  // events, responses and oneway requests get no answer
                }
                out.append(head)
                out.append(UnsafeRawBufferPointer(rebasing: line[id]))
                out.append(middle)
                if let params = members.params {
                    out.append(UnsafeRawBufferPointer(rebasing: line[params]))
                } else {
                    out.append(emptyObject)
                }
                out.append(tail)
            }
            guard lines != nil else { return }
            if out.count > 0 { try connection.writeAll(out) }
        }
    }

    /// Registers every one of `targets` on one connection, then serves it.
    /// Registrations go out in batches of 256, each answered before the next
    /// is sent, so that 10,000 of them fill no buffer on either side.
    static func runBrokered(socketPath: String, targets: [String] = [defaultTarget]) throws {
        let connection = RawLineSocket(fd: try UnixSocket.connect(path: socketPath))
        let batchSize = 256
        let out = ByteBuffer()
        var next = 0
        while next < targets.count {
            let batch = next..<min(next + batchSize, targets.count)
            out.removeAll()
            for index in batch {
                out.append(Array(#"{"id":"\#(registerID)-\#(index)","target":"mediator","action":"register","params":{"target":"\#(targets[index])","actions":["echo"],"description":"mediator-bench echo"}}"#.utf8))
                out.append([0x0A])
            }
            try connection.writeAll(out)
            var answered = 0
            while answered < batch.count {
                guard let line = try connection.readLine() else { throw BenchError("mediatord closed the connection") }
                // Only our register answers have a string id that starts with registerID.
                guard let members = LineJSON.scan(line), let id = members.id,
                      LineJSON.text(line, id).hasPrefix("\"\(registerID)-") else { continue }
                guard members.result != nil else { throw BenchError("register failed: \(LineJSON.text(line))") }
                answered += 1
            }
            next = batch.upperBound
        }
        announceReady()
        try serve(connection)
    }

    static func runDirect(socketPath: String) throws {
        let listener = try UnixSocket.listen(path: socketPath)
        announceReady()
        while true {
            let fd = try UnixSocket.accept(listener)
            let box = ConnectionBox(RawLineSocket(fd: fd))
            let thread = Thread {
                do { try serve(box.connection) } catch { FileHandle.standardError.write(Data("component: \(error)\n".utf8)) }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Tells the parent process (which reads our stdout) that calls can start.
    static func announceReady() {
        let line = "ready\n"
        _ = line.withCString { write(STDOUT_FILENO, $0, strlen($0)) }
    }
}

/// Hands a connection to the thread that serves it.
/// `@unchecked Sendable`: handed over once, then used by that thread alone.
final class ConnectionBox: @unchecked Sendable {
    let connection: RawLineSocket
    init(_ connection: RawLineSocket) { self.connection = connection }
}
