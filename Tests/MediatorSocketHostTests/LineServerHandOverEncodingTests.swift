import MediatorSocket
import MediatorSocketHost
import SocketTesting
import Testing

/// The byte form of a socket hand-over (issue 28): read back as written,
/// and refused, with a typed error, when it is not one this daemon reads.
@Suite struct LineServerHandOverEncodingTests {
    /// Two connections with something in every field; memfds stand in for
    /// the sockets (decoding does not look at what a descriptor is).
    static func sample(_ watch: LeakWatch) throws -> LineServerHandOver {
        LineServerHandOver(
            listener: try watch.memfd("listener"),
            connections: [
                .init(
                    id: 3, socket: try watch.memfd("socket 3"),
                    inbound: .init(
                        bytes: Array("{\"half".utf8), streamOffset: 120, discardingLine: false,
                        batches: [DescriptorBatch(range: 118..<126, descriptors: [try watch.memfd("in 1"), try watch.memfd("in 2")], truncated: false)]),
                    outbound: [.init(bytes: Array("rest\n".utf8)), .init(bytes: Array("x\n".utf8), descriptors: [try watch.memfd("out")])],
                    readingPaused: true, closing: false, reportedBacklog: 7),
                .init(
                    id: 9, socket: try watch.memfd("socket 9"),
                    inbound: .init(bytes: [], streamOffset: 5000, discardingLine: true, batches: []),
                    outbound: [], readingPaused: false, closing: true, reportedBacklog: 0),
            ],
            nextConnectionID: 12)
    }

    /// What the hand-over says, with each descriptor's file contents.
    static func summary(_ handOver: LineServerHandOver) throws -> [String] {
        var lines = ["next \(handOver.nextConnectionID)", "listener \(try LeakWatch.contents(of: handOver.listener))"]
        for connection in handOver.connections {
            lines.append("""
                \(connection.id) \(try LeakWatch.contents(of: connection.socket)) paused \(connection.readingPaused) \
                closing \(connection.closing) backlog \(connection.reportedBacklog) \
                in \(connection.inbound.bytes) at \(connection.inbound.streamOffset) discarding \(connection.inbound.discardingLine)
                """)
            for batch in connection.inbound.batches {
                lines.append("batch \(batch.range) \(batch.truncated) \(try batch.descriptors.map(LeakWatch.contents(of:)))")
            }
            for write in connection.outbound {
                lines.append("write \(write.bytes) \(try write.descriptors.map(LeakWatch.contents(of:)))")
            }
        }
        return lines
    }

    @Test func readsBackWhatItWrote() throws {
        try expectNoLeaks { watch in
            let handOver = try Self.sample(watch)
            #expect(try handOver.descriptors.map(LeakWatch.contents(of:))
                == ["listener", "socket 3", "in 1", "in 2", "out", "socket 9"])
            let decoded = try LineServerHandOver.decode(handOver.encoded(), descriptors: handOver.descriptors)
            #expect(try Self.summary(decoded) == Self.summary(handOver))
            #expect(decoded.encoded() == handOver.encoded())
        }
    }

    @Test func anotherVersionOrMagicIsRefused() throws {
        try expectNoLeaks { watch in
            let handOver = try Self.sample(watch)
            var bytes = handOver.encoded()
            let versionAt = LineServerHandOver.magic.count
            bytes[versionAt] = 2
            #expect(throws: LineServerHandOverError.unsupportedVersion(2)) {
                try LineServerHandOver.decode(bytes, descriptors: handOver.descriptors)
            }
            bytes = handOver.encoded()
            bytes[0] = 0x7B
            #expect(throws: LineServerHandOverError.notAHandOver) {
                try LineServerHandOver.decode(bytes, descriptors: handOver.descriptors)
            }
        }
    }

    @Test func everyTruncationAndTrailingBytesAreRefused() throws {
        try expectNoLeaks { watch in
            let handOver = try Self.sample(watch)
            let bytes = handOver.encoded()
            for length in 0..<bytes.count {
                #expect(throws: LineServerHandOverError.self, "cut at \(length)") {
                    try LineServerHandOver.decode(Array(bytes[0..<length]), descriptors: handOver.descriptors)
                }
            }
            #expect(throws: LineServerHandOverError.malformed("1 bytes after the last connection")) {
                try LineServerHandOver.decode(bytes + [0], descriptors: handOver.descriptors)
            }
            #expect(throws: LineServerHandOverError.tooLarge(bytes: bytes.count, limit: 64)) {
                try LineServerHandOver.decode(bytes, descriptors: handOver.descriptors, limit: 64)
            }
        }
    }

    @Test func descriptorsMustBeExactlyThoseReferredTo() throws {
        try expectNoLeaks { watch in
            let handOver = try Self.sample(watch)
            let bytes = handOver.encoded()
            let descriptors = handOver.descriptors
            #expect(throws: LineServerHandOverError.descriptorMismatch("connections[1].socket refers to descriptor 5 of 5")) {
                try LineServerHandOver.decode(bytes, descriptors: Array(descriptors.dropLast()))
            }
            #expect(throws: LineServerHandOverError.descriptorMismatch("descriptor 6 of 7 is referred to by nothing")) {
                try LineServerHandOver.decode(bytes, descriptors: descriptors + [try watch.memfd()])
            }
        }
    }

    @Test func aReusedConnectionIdIsRefused() throws {
        try expectNoLeaks { watch in
            var handOver = try Self.sample(watch)
            handOver.connections[1].id = 3
            #expect(throws: LineServerHandOverError.malformed("connections[1].id 3 is reused or not below the next id 12")) {
                try LineServerHandOver.decode(handOver.encoded(), descriptors: handOver.descriptors)
            }
        }
    }

    /// A count that the bytes left cannot hold is refused before anything
    /// is allocated for it.
    @Test func aHugeCountIsRefusedWithoutAllocating() throws {
        try expectNoLeaks { watch in
            let listener = try watch.memfd()
            var bytes = LineServerHandOver.magic
            for field: [UInt8] in [[1, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0], [0xFF, 0xFF, 0xFF, 0xFF]] { bytes += field }
            #expect(throws: LineServerHandOverError.truncated(field: "connections")) {
                try LineServerHandOver.decode(bytes, descriptors: [listener])
            }
        }
    }
}
