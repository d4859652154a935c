import MediatorTransport
import NIOCore
import Testing

@testable import MediatorDaemon

/// The fair order in which the host handles lines it has read.
@Suite("Inbound queues: fair turns across uids and connections")
struct InboundQueuesTests {
    /// A line whose bytes name where it came from, e.g. "c1#3".
    static func line(_ text: String) -> InboundLine {
        .frame(ByteBuffer(string: text))
    }

    static func text(_ line: InboundLine) -> String {
        switch line {
        case .frame(let buffer): return String(buffer: buffer)
        case .tooLarge: return "tooLarge"
        }
    }

    /// Takes every line in the order the queues hand them out.
    static func drain(_ queues: InboundQueues) -> [String] {
        var order: [String] = []
        while let next = queues.next() { order.append(text(next.line.line)) }
        return order
    }

    @Test("One connection: its lines come out in the order they arrived")
    func fifo() {
        let queues = InboundQueues()
        for i in 1...5 { queues.append(Self.line("c1#\(i)"), from: 1, uid: 1000) }
        #expect(queues.count == 5)
        #expect(Self.drain(queues) == ["c1#1", "c1#2", "c1#3", "c1#4", "c1#5"])
        #expect(queues.isEmpty)
        #expect(queues.next() == nil)
    }

    @Test("A flooding uid's backlog does not delay another uid's line beyond one turn")
    func floodingUIDTakesTurns() {
        let queues = InboundQueues()
        for i in 1...100 { queues.append(Self.line("flood#\(i)"), from: 1, uid: 4101) }
        queues.append(Self.line("victim#1"), from: 2, uid: 4102)
        #expect(queues.uidsWaiting == 2)
        let order = Self.drain(queues)
        #expect(order.firstIndex(of: "victim#1") == 1)
        #expect(order.filter { $0.hasPrefix("flood") } == (1...100).map { "flood#\($0)" })
    }

    @Test("Many connections of one uid share that uid's turn; another uid alternates with them")
    func connectionsShareTheirUIDsTurn() {
        let queues = InboundQueues()
        for connection in 1...4 {
            for i in 1...3 { queues.append(Self.line("a\(connection)#\(i)"), from: connection, uid: 4101) }
        }
        for i in 1...3 { queues.append(Self.line("b#\(i)"), from: 9, uid: 4102) }
        let order = Self.drain(queues)
        // Turns alternate between the uids while both wait...
        #expect(Array(order.prefix(6)) == ["a1#1", "b#1", "a2#1", "b#2", "a3#1", "b#3"])
        // ...then uid 4101's connections keep taking turns among themselves.
        #expect(Array(order.dropFirst(6)) == ["a4#1", "a1#2", "a2#2", "a3#2", "a4#2", "a1#3", "a2#3", "a3#3", "a4#3"])
    }

    @Test("append reports each connection's backlog; next reports what is left")
    func backlogFigures() {
        let queues = InboundQueues()
        #expect(queues.append(Self.line("x"), from: 1, uid: 1) == 1)
        #expect(queues.append(Self.line("y"), from: 1, uid: 1) == 2)
        #expect(queues.append(Self.line("z"), from: 2, uid: 1) == 1)
        #expect(queues.waiting(1) == 2)
        #expect(queues.next()?.left == 1)
        #expect(queues.next()?.left == 0)
        #expect(queues.next()?.left == 0)
        #expect(queues.waiting(1) == 0)
    }

    @Test("A closing connection's lines are taken out in order; the others keep theirs and their turns")
    func removeAll() {
        let queues = InboundQueues()
        queues.append(Self.line("a#1"), from: 1, uid: 1)
        queues.append(.tooLarge, from: 1, uid: 1)
        queues.append(Self.line("a#3"), from: 1, uid: 1)
        queues.append(Self.line("b#1"), from: 2, uid: 1)
        queues.append(Self.line("c#1"), from: 3, uid: 2)
        #expect(queues.removeAll(from: 1).map { Self.text($0.line) } == ["a#1", "tooLarge", "a#3"])
        #expect(queues.removeAll(from: 1).isEmpty)
        #expect(queues.count == 2)
        #expect(Self.drain(queues) == ["b#1", "c#1"])
        // A uid whose only connection closed leaves no empty turn behind.
        queues.append(Self.line("d#1"), from: 4, uid: 3)
        #expect(queues.removeAll(from: 4).count == 1)
        #expect(queues.uidsWaiting == 0)
        #expect(queues.next() == nil)
    }
}
