import Foundation
import MediatorEventLoop
import MediatorSocket
import MediatorSocketHost
import SocketTesting
import Testing

/// A LineServer hands its listener and connections over to one on another
/// loop (issue 28), through the byte form and descriptors that are not the
/// same numbers (as SCM_RIGHTS or the fd store would give them back).
extension LineServerTests {
    /// A successor server on its own loop, adopting `handOver`.
    func adopt(
        _ handOver: LineServerHandOver, _ watch: LeakWatch,
        reply: ((LineServer, Int, [UInt8], [OwnedDescriptor]) -> Void)? = nil
    ) throws -> (LineServer, SDEventLoop, Seen, ServerReference) {
        let loop = try SDEventLoop()
        let seen = Seen()
        let server = ServerReference()
        server.value = try LineServer(
            loop: loop, adopting: handOver, maxLineBytes: 1024,
            handlers: Self.handlers(seen, server, accepted: { _, socket in try? watch.watch(socket) }, reply: reply))
        return (try #require(server.value), loop, seen, server)
    }

    /// The hand-over as a successor gets it: decoded from its bytes, with
    /// new numbers for the same open files (as from another process) or,
    /// unless `renumbered`, the same numbers (as in a re-exec; then a
    /// predecessor that closed what it handed over breaks the successor).
    func travel(_ handOver: LineServerHandOver, renumbered: Bool = true) throws -> LineServerHandOver {
        let bytes = handOver.encoded()
        guard renumbered else { return try LineServerHandOver.decode(bytes, descriptors: handOver.descriptors) }
        let travelled = try handOver.descriptors.map { try $0.duplicate() }
        for descriptor in handOver.descriptors { try descriptor.close() }
        return try LineServerHandOver.decode(bytes, descriptors: travelled)
    }

    /// Everything a client receives until `done` (bounded by `pump`).
    final class Received {
        var bytes: [UInt8] = []
        var files: [String] = []
        var text: String { String(decoding: bytes, as: UTF8.self) }

        func drain(_ client: UnixStreamSocket) throws {
            while let chunk = try client.receiveOnce(capacity: 1 << 16) {
                bytes += chunk.bytes
                files += try chunk.descriptors.map(LeakWatch.contents(of:))
            }
        }
    }

    @Test func connectionsCarryOnInTheSuccessor() throws {
        var listenerTarget: String?
        try expectNoLeaks { watch in
            let flood = String(repeating: "f", count: 60_000)
            let floodLines = 40
            // "flood" fills the socket of a client that does not read, and
            // ends with a line carrying a file; anything else is echoed.
            let reply: (LineServer, Int, [UInt8], [OwnedDescriptor]) -> Void = { server, id, line, descriptors in
                guard line == Array("flood".utf8) else {
                    server.send(id, line: line, descriptors: descriptors)
                    return
                }
                for _ in 0..<floodLines { server.send(id, line: Array(flood.utf8)) }
                if let file = try? watch.memfd("flood-file") {
                    server.send(id, line: Array("fds=1 end of flood".utf8), descriptors: [file])
                }
            }
            let path = NSTemporaryDirectory() + "line-server-handover-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
            defer { unlink(path) }
            let listener = try UnixListener.listen(path: path, backlog: 16)
            let listenerNumber = try #require(listener.descriptor.rawValue)
            listenerTarget = LeakWatch.target(of: listenerNumber)
            let loop = try SDEventLoop()
            let seen = Seen()
            let reference = ServerReference()
            reference.value = try LineServer(
                loop: loop, listener: listener, maxLineBytes: 1024,
                handlers: Self.handlers(seen, reference, accepted: { _, socket in try? watch.watch(socket) }, reply: reply))
            // Weak: the predecessor goes before the successor starts.
            weak let server = reference.value

            // One at a time, so that their ids are 1, 2, 3.
            var clients: [UnixStreamSocket] = []
            for _ in 0..<3 {
                let client = try UnixStreamSocket.connect(path: path)
                try watch.watch(client)
                clients.append(client)
                try pump(loop) { server?.connectionCount == clients.count }
            }
            let (halfLine, slowReader, idle) = (clients[0], clients[1], clients[2])
            try halfLine.sendAll("fds=1 half", descriptors: [try watch.memfd("half-file")])
            try slowReader.sendAll("flood\n")
            try idle.sendAll("fds=1 idle\n", descriptors: [try watch.memfd("idle-file")])
            let idleEcho = Received()
            try pump(loop) {
                try idleEcho.drain(idle)
                return idleEcho.files == ["idle-file"] && server?.queuedDescriptors(2) == 1
            }
            #expect(idleEcho.text == "fds=1 idle\n")
            let queuedBefore = try #require(server?.queuedBytes(2))
            #expect(queuedBefore > 0, "the slow reader has output queued")

            let handOver = try #require(server?.handOver())
            #expect(server?.handOver() == nil, "handed over once")
            #expect(handOver.connections.map(\.id) == [1, 2, 3])
            #expect(handOver.nextConnectionID == 4)
            #expect(handOver.connections.first?.inbound.bytes == Array("fds=1 half".utf8))
            #expect(handOver.connections.first?.inbound.batches.map(\.descriptors.count) == [1])
            #expect(handOver.connections.dropFirst().first?.outbound.reduce(0) { $0 + $1.bytes.count } == queuedBefore)
            #expect(server?.connectionCount == 0 && server?.queuedBytes(2) == 0)
            // The predecessor closes nothing it handed over, at shutdown or when it goes.
            server?.shutdown()
            reference.value = nil
            #expect(server == nil)
            #expect(seen.closed.isEmpty)
            seen.lines = []

            let (successor, successorLoop, successorSeen, successorReference) = try adopt(
                try travel(handOver, renumbered: false), watch, reply: reply)
            defer {
                successor.shutdown()
                successorReference.value = nil
            }
            #expect(successor.connectionCount == 3)

            // The half line completes, once, with the file sent with its first part.
            try halfLine.sendAll(" done\n")
            let halfEcho = Received()
            try pump(successorLoop) {
                try halfEcho.drain(halfLine)
                return halfEcho.files == ["half-file"]
            }
            #expect(successorSeen.lines.map(\.id) == [1])
            #expect(successorSeen.lines.map(\.text) == ["fds=1 half done"])
            #expect(halfEcho.text == "fds=1 half done\n")

            // The queued output arrives whole and once, its file with it.
            let floodEcho = Received()
            let expected = String(repeating: flood + "\n", count: floodLines) + "fds=1 end of flood\n"
            try pump(successorLoop) {
                try floodEcho.drain(slowReader)
                return floodEcho.bytes.count >= expected.utf8.count && successor.queuedBytes(2) == 0
            }
            try floodEcho.drain(slowReader)
            #expect(floodEcho.text == expected)
            #expect(floodEcho.files == ["flood-file"])

            // Old connections keep their ids; a new one is numbered after them.
            try idle.sendAll("again\n")
            let newcomer = try UnixStreamSocket.connect(path: path)
            try watch.watch(newcomer)
            try newcomer.sendAll("new\n")
            try pump(successorLoop) { successorSeen.lines.count == 3 }
            #expect(successorSeen.lines.dropFirst().map(\.id).sorted() == [3, 4])
            let newEcho = Received()
            try pump(successorLoop) {
                try newEcho.drain(newcomer)
                return newEcho.text == "new\n"
            }
            successorSeen.lines = []

            for client in clients + [newcomer] { try client.close() }
            try pump(successorLoop) { successorSeen.closed.count == 4 }
            #expect(successorSeen.closed.sorted() == [1, 2, 3, 4])
        }
        let target = try #require(listenerTarget)
        #expect(!LeakWatch.openTargets().contains(target), "the listener is closed once the successor goes")
    }

    /// A hand-over made from inside a line's handler (a restart asked on a
    /// connection) leaves the lines read after that one for the successor:
    /// they are delivered without waiting for the peer to send more.
    @Test func linesReadWholeButNotDeliveredGoToTheSuccessor() throws {
        try expectNoLeaks { watch in
            var handOver: LineServerHandOver?
            let (server, loop, seen, path) = try start(watch) { server, id, line, descriptors in
                if line == Array("restart".utf8) {
                    handOver = server.handOver()
                } else {
                    server.send(id, line: line, descriptors: descriptors)
                }
            }
            defer { server.shutdown(); unlink(path) }
            let client = try UnixStreamSocket.connect(path: path)
            try watch.watch(client)
            try client.sendAll("restart\nafter\nfds=1 file\n", descriptors: [try watch.memfd("carried")])
            try pump(loop) { handOver != nil }
            #expect(seen.lines.map(\.text) == ["restart"], "nothing after the hand-over")
            let (successor, successorLoop, successorSeen, reference) = try adopt(try travel(try #require(handOver)), watch)
            handOver = nil
            defer {
                successor.shutdown()
                reference.value = nil
            }
            try pump(successorLoop) { successorSeen.lines.count == 2 }
            #expect(successorSeen.lines.map(\.text) == ["after", "fds=1 file"])
            #expect(try successorSeen.lines.last.map { try $0.descriptors.map(LeakWatch.contents(of:)) } == ["carried"])
            successorSeen.lines = []
            let echo = Received()
            try pump(successorLoop) {
                try echo.drain(client)
                return echo.text == "after\nfds=1 file\n"
            }
            #expect(echo.files == ["carried"])
            try client.close()
            try pump(successorLoop) { successorSeen.closed == [1] }
        }
    }

    /// A connection closing with output queued is written to, then closed,
    /// by the successor.
    @Test func aClosingConnectionIsClosedBySuccessorOnceWritten() throws {
        try expectNoLeaks { watch in
            var handOver: LineServerHandOver?
            // Handed over in the iteration that queued the parting line, before its flush.
            let (server, loop, seen, path) = try start(watch) { server, id, _, _ in
                server.send(id, line: Array("bye".utf8))
                server.close(id)
                handOver = server.handOver()
            }
            defer { server.shutdown(); unlink(path) }
            let client = try UnixStreamSocket.connect(path: path)
            try watch.watch(client)
            try client.sendAll("hello\n")
            try pump(loop) { handOver != nil }
            #expect(seen.closed.isEmpty)
            #expect(handOver?.connections.map(\.closing) == [true])
            let (successor, successorLoop, successorSeen, reference) = try adopt(try travel(try #require(handOver)), watch)
            handOver = nil
            defer {
                successor.shutdown()
                reference.value = nil
            }
            let received = Received()
            try pump(successorLoop) {
                try received.drain(client)
                return successorSeen.closed == [1]
            }
            try received.drain(client)
            #expect(received.text == "bye\n")
            try client.close()
        }
    }

    /// Reading paused by the broker (its peers do not keep up) stays paused
    /// in the successor until it resumes it.
    @Test func pausedReadingStaysPausedInTheSuccessor() throws {
        try expectNoLeaks { watch in
            let (server, loop, seen, path) = try start(watch)
            defer { server.shutdown(); unlink(path) }
            let client = try UnixStreamSocket.connect(path: path)
            try watch.watch(client)
            try client.sendAll("first\n")
            try pump(loop) { seen.lines.count == 1 }
            server.setReading(1, false)
            let handOver = try #require(server.handOver())
            #expect(handOver.connections.map(\.readingPaused) == [true])
            let (successor, successorLoop, successorSeen, reference) = try adopt(try travel(handOver), watch)
            defer {
                successor.shutdown()
                reference.value = nil
            }
            try client.sendAll("second\n")
            for _ in 0..<5 { _ = try successorLoop.runOnce(timeout: .milliseconds(10)) }
            #expect(successorSeen.lines.isEmpty, "not read while paused")
            successor.setReading(1, true)
            try pump(successorLoop) { successorSeen.lines.count == 1 }
            #expect(successorSeen.lines.map(\.text) == ["second"])
            successorSeen.lines = []
            try client.close()
            try pump(successorLoop) { successorSeen.closed == [1] }
        }
    }
}
