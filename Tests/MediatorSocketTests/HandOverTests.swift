import SocketTesting
import Testing

@testable import MediatorSocket

/// The inbound and outbound halves of a connection carried to a successor
/// (issue 28): what one value hands over, another carries on from.
@Suite struct SocketHandOverTests {
    @Test func aHalfLineAndItsDescriptorsCompleteInTheSuccessor() throws {
        try expectNoLeaks { watch in
            let (client, server) = try watchedPair(watch)
            var frames = InboundFrames(maxLineBytes: 1024)
            try client.sendAll("{\"fds\":1,\"half\":", descriptors: [try watch.memfd("carried")])
            #expect(try frames.readAvailable(from: server, maxBytes: 4096).isEmpty)
            let handOver = frames.handOver()
            #expect(handOver.bytes == Array("{\"fds\":1,\"half\":".utf8))
            #expect(handOver.batches.map(\.descriptors.count) == [1])
            let (keptBytes, keptDescriptors) = (frames.bufferedByteCount, frames.hasQueuedDescriptors)
            #expect(keptBytes == 0 && !keptDescriptors, "the predecessor keeps nothing")

            var successor = InboundFrames(maxLineBytes: 1024, resuming: handOver)
            try client.sendAll("1}\nnext\n")
            let lines = try successor.readAvailable(from: server, maxBytes: 4096)
            #expect(lines == [.line("{\"fds\":1,\"half\":1}", ["carried"]), .line("next")])
        }
    }

    /// A line over the limit that was being discarded stays discarded: its
    /// tail is not read as a line of its own.
    @Test func aLineBeingDiscardedStaysDiscardedInTheSuccessor() throws {
        try expectNoLeaks { watch in
            let (client, server) = try watchedPair(watch)
            var frames = InboundFrames(maxLineBytes: 8)
            try client.sendAll(String(repeating: "x", count: 40))
            #expect(try frames.readAvailable(from: server, maxBytes: 4096) == [.tooLarge])
            let handOver = frames.handOver()
            #expect(handOver.discardingLine)

            var successor = InboundFrames(maxLineBytes: 8, resuming: handOver)
            try client.sendAll("tail\nshort\n")
            #expect(try successor.readAvailable(from: server, maxBytes: 4096) == [.line("short")])
        }
    }

    @Test func aLineThatEndedIsNotDiscardedInTheSuccessor() throws {
        try expectNoLeaks { watch in
            let (client, server) = try watchedPair(watch)
            var frames = InboundFrames(maxLineBytes: 8)
            try client.sendAll(String(repeating: "x", count: 40) + "\n")
            #expect(try frames.readAvailable(from: server, maxBytes: 4096) == [.tooLarge])
            #expect(!frames.handOver().discardingLine)
        }
    }

    /// The rest of a partly written sendmsg goes without its descriptors
    /// (they went with its first byte); a whole one keeps them.
    @Test func queuedOutputIsWrittenOnceBySuccessor() throws {
        try expectNoLeaks { watch in
            let (server, client) = try watchedPair(watch)
            try server.setSendBuffer(4096)
            var queue = OutboundQueue()
            let big = [UInt8](repeating: 0x61, count: 256 << 10)
            try queue.enqueue(line: big)
            try queue.enqueue(line: Array("with file".utf8), descriptors: [try watch.memfd("sent")])
            #expect(try queue.write(to: server) == .wouldBlock)
            let written = big.count + 1 + 10 - queue.queuedByteCount
            #expect(written > 0)
            let pending = queue.handOver()
            let (left, leftDescriptors) = (queue.queuedByteCount, queue.queuedDescriptorCount)
            #expect(left == 0 && leftDescriptors == 0)
            #expect(pending.map(\.descriptors.count) == [0, 1])

            var successor = try OutboundQueue(resuming: pending)
            let resumed = successor.queuedByteCount
            #expect(resumed == big.count + 11 - written)
            var received: [UInt8] = []
            var files: [String] = []
            for _ in 0..<10_000 where received.count < big.count + 11 {
                _ = try successor.write(to: server)
                while let chunk = try client.receiveOnce(capacity: 1 << 16) {
                    received += chunk.bytes
                    files += try chunk.descriptors.map(LeakWatch.contents(of:))
                }
            }
            #expect(received == big + [0x0A] + Array("with file\n".utf8))
            #expect(files == ["sent"])
            let drained = successor.isEmpty
            #expect(drained)
        }
    }

    @Test func aResumedWriteWithoutBytesIsRefused() throws {
        try expectNoLeaks { watch in
            let descriptor = try watch.memfd()
            #expect(throws: SocketError.emptyBuffer) {
                _ = try OutboundQueue(resuming: [.init(bytes: [], descriptors: [descriptor])])
            }
            #expect(descriptor.rawValue != nil, "still the caller's")
        }
    }
}
