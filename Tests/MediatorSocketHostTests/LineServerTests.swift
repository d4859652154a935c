import Foundation
import MediatorEventLoop
import MediatorSocket
import MediatorSocketHost
import SocketTesting
import Testing

/// A LineServer on a real listening socket, driven by the test's own thread
/// (`runOnce`), with a client socket in the same thread: no waiting on
/// timing, every step bounded by a number of loop passes.
@Suite("LineServer", .timeLimit(.minutes(1)))
struct LineServerTests {
    /// What the handlers saw.
    final class Seen {
        var lines: [(id: Int, text: String, descriptors: [OwnedDescriptor])] = []
        var mismatches: [String] = []
        var tooLarge = 0
        var closed: [Int] = []
        var backlogs: [Int] = []
    }

    /// `fds=N rest`: the test's stand-in for the envelope's `"fds": N`.
    static func declared(_ line: [UInt8]) -> Int? {
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("fds="), let word = text.dropFirst(4).split(separator: " ").first else { return nil }
        return Int(word)
    }

    /// A server on a fresh socket path, its loop, and what it saw;
    /// `reply` runs for each line (an echo unless given).
    func start(
        _ watch: LeakWatch, maxLineBytes: Int = 1024,
        reply: ((LineServer, Int, [UInt8], [OwnedDescriptor]) -> Void)? = nil
    ) throws -> (LineServer, SDEventLoop, Seen, String) {
        let path = NSTemporaryDirectory() + "line-server-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let listener = try UnixListener.listen(path: path, backlog: 16)
        let loop = try SDEventLoop()
        let seen = Seen()
        let server = ServerReference()
        server.value = try LineServer(
            loop: loop, listener: listener, maxLineBytes: maxLineBytes, handlers: Self.handlers(seen, server, reply: reply))
        return (try #require(server.value), loop, seen, path)
    }

    /// The server the handlers answer through, set once it is made.
    final class ServerReference {
        var value: LineServer?
    }

    /// Handlers that record in `seen` and run `reply` for each line (an echo unless given).
    static func handlers(
        _ seen: Seen, _ server: ServerReference, accepted: @escaping (Int, UnixStreamSocket) -> Void = { _, _ in },
        reply: ((LineServer, Int, [UInt8], [OwnedDescriptor]) -> Void)?
    ) -> LineServer.Handlers {
        LineServer.Handlers(
            accepted: { id, socket in
                accepted(id, socket)
                return true
            },
            declaredDescriptors: Self.declared,
            line: { id, bytes, descriptors in
                let line = Array(bytes)
                seen.lines.append((id, String(decoding: line, as: UTF8.self), descriptors))
                guard let server = server.value else { return }
                if let reply {
                    reply(server, id, line, descriptors)
                } else {
                    server.send(id, line: line, descriptors: descriptors)
                }
            },
            descriptorMismatch: { _, line, _ in seen.mismatches.append(String(decoding: line, as: UTF8.self)) },
            tooLarge: { _ in seen.tooLarge += 1 },
            closed: { id in seen.closed.append(id) },
            backlogChanged: { _, bytes in seen.backlogs.append(bytes) })
    }

    /// Runs loop passes until `done` or 200 passes (each waits at most 50 ms).
    func pump(_ loop: SDEventLoop, until done: () throws -> Bool) throws {
        for _ in 0..<200 {
            if try done() { return }
            _ = try loop.runOnce(timeout: .milliseconds(50))
        }
        Issue.record("not done after 200 loop passes")
    }

    @Test func linesAndTheirDescriptorsGoBothWays() throws {
        try expectNoLeaks { watch in
            let (server, loop, seen, path) = try start(watch)
            defer { server.shutdown(); unlink(path) }
            let client = try UnixStreamSocket.connect(path: path)
            try watch.watch(client)
            try client.sendAll("fds=2 two files\nplain\n", descriptors: [try watch.memfd("a"), try watch.memfd("b")])
            try pump(loop) { seen.lines.count == 2 }
            #expect(seen.lines.map(\.text) == ["fds=2 two files", "plain"])
            #expect(seen.lines.map(\.descriptors.count) == [2, 0])
            seen.lines = []  // the server owns the echoed descriptors now

            var echoed: (bytes: [UInt8], descriptors: [OwnedDescriptor], truncated: Bool)?
            try pump(loop) {
                echoed = try client.receiveOnce()
                return echoed != nil
            }
            let echoedText = String(decoding: echoed?.bytes ?? [], as: UTF8.self)
            #expect(echoedText.hasPrefix("fds=2 two files\n"))
            #expect(try (echoed?.descriptors ?? []).map(LeakWatch.contents(of:)) == ["a", "b"], "the same files came back")
            try client.close()
            try pump(loop) { seen.closed.count == 1 }
            #expect(server.connectionCount == 0)
        }
    }

    /// The host counts descriptors queued toward a peer against their
    /// sender's quota until a report says they were written: one written
    /// at once (the backlog of bytes stays 0) must be reported too, or the
    /// count only grows (every descriptor a non-root uid ever sent).
    @Test func descriptorsWrittenAtOnceAreReported() throws {
        try expectNoLeaks { watch in
            let (server, loop, seen, path) = try start(watch)
            defer { server.shutdown(); unlink(path) }
            let client = try UnixStreamSocket.connect(path: path)
            try watch.watch(client)
            try client.sendAll("plain\n")
            try pump(loop) { seen.lines.count == 1 }
            #expect(seen.backlogs.isEmpty, "a line without descriptors written at once changes nothing")
            try client.sendAll("fds=1 one file\n", descriptors: [try watch.memfd("a")])
            try pump(loop) { seen.lines.count == 2 && !seen.backlogs.isEmpty }
            #expect(seen.backlogs == [0])
            let id = try #require(seen.lines.first?.id)
            #expect(server.queuedDescriptors(id) == 0 && server.queuedBytes(id) == 0)
            seen.lines = []
            while try client.receiveOnce() != nil {}
            try client.close()
            try pump(loop) { seen.closed.count == 1 }
        }
    }

    @Test func descriptorsThatDidNotComeWithTheirLineAreReportedAndClosed() throws {
        try expectNoLeaks { watch in
            let (server, loop, seen, path) = try start(watch)
            defer { server.shutdown(); unlink(path) }
            let client = try UnixStreamSocket.connect(path: path)
            try watch.watch(client)
            try client.sendAll("fds=1 but none came\n")
            try client.sendAll("fds=1 and two came\n", descriptors: [try watch.memfd(), try watch.memfd()])
            // The kernel may hand both lines and the two descriptors to one
            // read, which starts with the first line: then that line is the
            // mismatch. A line read while no descriptors are queued goes to
            // `line` with none, and its reader checks what it declares.
            try pump(loop) { seen.mismatches.count + seen.lines.count == 2 }
            #expect(seen.mismatches.count >= 1)
            #expect(seen.lines.allSatisfy { $0.descriptors.isEmpty }, "no line got descriptors that were not its own")
            try client.close()
            try pump(loop) { seen.closed.count == 1 }
        }
    }

    @Test func aLineOverTheLimitIsReportedAndTheNextOneStillArrives() throws {
        try expectNoLeaks { watch in
            let (server, loop, seen, path) = try start(watch, maxLineBytes: 16)
            defer { server.shutdown(); unlink(path) }
            let client = try UnixStreamSocket.connect(path: path)
            try watch.watch(client)
            try client.sendAll(String(repeating: "x", count: 100) + "\nshort\n")
            try pump(loop) { seen.lines.count == 1 }
            #expect(seen.tooLarge == 1)
            #expect(seen.lines.first?.text == "short")
            try client.close()
            try pump(loop) { seen.closed.count == 1 }
        }
    }

    @Test func closeWritesWhatIsQueuedFirst() throws {
        try expectNoLeaks { watch in
            let (server, loop, seen, path) = try start(watch) { server, id, _, _ in
                server.send(id, line: Array("bye".utf8))
                server.close(id)
            }
            defer { server.shutdown(); unlink(path) }
            let client = try UnixStreamSocket.connect(path: path)
            try watch.watch(client)
            try client.sendAll("hello\n")
            var received: [UInt8] = []
            try pump(loop) {
                if let chunk = try client.receiveOnce() { received += chunk.bytes }
                return seen.closed.count == 1
            }
            while let chunk = try client.receiveOnce() { received += chunk.bytes }
            #expect(String(decoding: received, as: UTF8.self) == "bye\n")
            #expect(server.send(1, line: Array("late".utf8)) == false, "a closed connection takes nothing more")
            try client.close()
        }
    }

    @Test func manyLinesToOnePeerInOneIterationLeaveInOneFlush() throws {
        try expectNoLeaks { watch in
            let (server, loop, seen, path) = try start(watch) { server, id, line, _ in
                for _ in 0..<50 { server.send(id, line: line) }
                #expect(server.queuedBytes(id) > 0, "queued until the end of the iteration")
            }
            defer { server.shutdown(); unlink(path) }
            let client = try UnixStreamSocket.connect(path: path)
            try watch.watch(client)
            try client.sendAll("x\n")
            var received: [UInt8] = []
            try pump(loop) {
                if let chunk = try client.receiveOnce(capacity: 1 << 16) { received += chunk.bytes }
                return received.count >= 100
            }
            #expect(received == Array(repeating: Array("x\n".utf8), count: 50).flatMap { $0 })
            #expect(seen.lines.count == 1)
            try client.close()
            try pump(loop) { seen.closed.count == 1 }
        }
    }

    @Test func aPeerThatDoesNotReadHasItsBacklogReportedUntilItDrains() throws {
        try expectNoLeaks { watch in
            let chunk = [UInt8](repeating: 0x61, count: 64 << 10)
            let (server, loop, seen, path) = try start(watch) { server, id, _, _ in
                for _ in 0..<64 { server.send(id, line: chunk) }
            }
            defer { server.shutdown(); unlink(path) }
            let client = try UnixStreamSocket.connect(path: path)
            try watch.watch(client)
            try client.sendAll("flood me\n")
            try pump(loop) { (seen.backlogs.last ?? 0) > 0 }
            #expect(server.queuedBytes(1) == seen.backlogs.last, "what is reported is what is queued")
            var received = 0
            try pump(loop) {
                while let got = try client.receiveOnce(capacity: 1 << 16) { received += got.bytes.count }
                return seen.backlogs.last == 0
            }
            while let got = try client.receiveOnce(capacity: 1 << 16) { received += got.bytes.count }
            #expect(received == 64 * (chunk.count + 1))
            try client.close()
            try pump(loop) { seen.closed.count == 1 }
        }
    }

    @Test func readingPausedKeepsLinesUntilResumed() throws {
        try expectNoLeaks { watch in
            let (server, loop, seen, path) = try start(watch)
            defer { server.shutdown(); unlink(path) }
            let client = try UnixStreamSocket.connect(path: path)
            try watch.watch(client)
            try client.sendAll("first\n")
            try pump(loop) { seen.lines.count == 1 }
            server.setReading(1, false)
            try client.sendAll("second\n")
            for _ in 0..<5 { _ = try loop.runOnce(timeout: .milliseconds(10)) }
            #expect(seen.lines.count == 1, "not read while paused")
            server.setReading(1, true)
            try pump(loop) { seen.lines.count == 2 }
            #expect(seen.lines.last?.text == "second")
            try client.close()
            try pump(loop) { seen.closed.count == 1 }
        }
    }
}
