import Glibc
import MediatorEventLoop
import Testing

@Suite("sd-event: I/O sources", .timeLimit(.minutes(1)))
struct IOSourceTests {
    @Test func aSocketIsReadableOnceThePeerWrote() throws {
        let loop = try SDEventLoop()
        let pair = try SocketPair()
        var reported: [IOEvents] = []
        var received: [UInt8] = []
        let source = try loop.addIO(fd: pair.a, events: .readable) { source, events in
            reported.append(events)
            received += SocketPair.read(source.fd)
        }
        try loop.dispatchReady()
        #expect(reported.isEmpty)

        SocketPair.write(pair.b, Array("ping".utf8))
        #expect(try loop.run(until: { !reported.isEmpty }))
        #expect(reported == [.readable])
        #expect(received == Array("ping".utf8))
        source.cancel()
    }

    @Test func aSocketWithRoomIsWritable() throws {
        let loop = try SDEventLoop()
        let pair = try SocketPair()
        var reported: [IOEvents] = []
        let source = try loop.addIO(fd: pair.a, events: .writable) { _, events in reported.append(events) }
        #expect(try loop.run(until: { !reported.isEmpty }))
        #expect(reported.first == .writable)
        #expect(try source.events() == .writable)
    }

    @Test func aFullSocketBecomesWritableWhenThePeerReads() throws {
        let loop = try SDEventLoop()
        let pair = try SocketPair()
        #expect(SocketPair.fill(pair.a) > 0)
        var writable = 0
        let source = try loop.addIO(fd: pair.a, events: .writable) { _, events in
            if events.contains(.writable) { writable += 1 }
        }
        try loop.dispatchReady()
        #expect(writable == 0)

        #expect(SocketPair.drain(pair.b) > 0)
        #expect(try loop.run(until: { writable > 0 }))
        source.cancel()
    }

    @Test func anEdgeTriggeredSourceReportsWritableOncePerChange() throws {
        let loop = try SDEventLoop()
        let pair = try SocketPair()
        var writable = 0
        let source = try loop.addIO(fd: pair.a, events: [.writable, .edgeTriggered]) { _, events in
            if events.contains(.writable) { writable += 1 }
        }
        #expect(try loop.run(until: { writable == 1 }))
        // Still writable, but no new edge: level-triggered would report again.
        try loop.dispatchReady()
        try loop.dispatchReady()
        #expect(writable == 1)

        // Full, then drained: one edge.
        #expect(SocketPair.fill(pair.a) > 0)
        try loop.dispatchReady()
        #expect(writable == 1)
        #expect(SocketPair.drain(pair.b) > 0)
        #expect(try loop.run(until: { writable == 2 }))
        source.cancel()
    }

    @Test func changingTheEventsTakesEffect() throws {
        let loop = try SDEventLoop()
        let pair = try SocketPair()
        var reported: [IOEvents] = []
        let source = try loop.addIO(fd: pair.a, events: .readable) { _, events in reported.append(events) }
        try loop.dispatchReady()
        #expect(reported.isEmpty)

        try source.setEvents(.writable)
        #expect(try source.events() == .writable)
        #expect(try loop.run(until: { !reported.isEmpty }))
        #expect(reported.first == .writable)
    }

    @Test func aClosedPeerIsReportedAsHangup() throws {
        let loop = try SDEventLoop()
        let pair = try SocketPair()
        var reported: IOEvents = []
        let source = try loop.addIO(fd: pair.a, events: [.readable, .readHangup]) { _, events in reported = events }
        shutdown(pair.b, Int32(SHUT_RDWR))
        #expect(try loop.run(until: { !reported.isEmpty }))
        #expect(reported.contains(.readHangup))
        source.cancel()
    }
}
