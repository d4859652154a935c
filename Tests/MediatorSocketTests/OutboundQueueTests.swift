import SocketTesting
import Testing

@testable import MediatorSocket

@Suite struct OutboundQueueTests {
    @Test func linesWithoutDescriptorsShareASendmsgAndDescriptorsStartOne() throws {
        try expectNoLeaks { watch in
            var queue = OutboundQueue()
            try queue.enqueue(line: Array("{\"a\":1}".utf8))
            try queue.enqueue(line: Array("{\"b\":2}".utf8))
            #expect(queue.chunkCount == 1)
            try queue.enqueue(line: Array("{\"c\":3,\"fds\":1}".utf8), descriptors: [try watch.memfd("c0")])
            try queue.enqueue(line: Array("{\"d\":4}".utf8))
            #expect(queue.chunkCount == 2)
            try queue.enqueue(line: Array("{\"e\":5,\"fds\":2}".utf8), descriptors: [try watch.memfd("e0"), try watch.memfd("e1")])
            #expect(queue.chunkCount == 3)
            #expect(queue.queuedByteCount == 5 * 8 + 8 + 8)
            #expect(queue.queuedDescriptorCount == 3)

            let (left, right) = try watchedPair(watch)
            #expect(try queue.write(to: left) == .drained)
            #expect(queue.isEmpty && queue.queuedDescriptorCount == 0 && queue.chunkCount == 0)
            // The queue's copies are closed once written; the kernel holds the rest.
            #expect(watch.openCount == 2, "the two sockets only")

            var frames = InboundFrames(maxLineBytes: 1024)
            #expect(try frames.readAvailable(from: right, maxBytes: 4096) == [
                .line("{\"a\":1}"), .line("{\"b\":2}"), .line("{\"c\":3,\"fds\":1}", ["c0"]),
                .line("{\"d\":4}"), .line("{\"e\":5,\"fds\":2}", ["e0", "e1"]),
            ])
        }
    }

    @Test func aFullBufferStartsANewSendmsg() throws {
        var queue = OutboundQueue(coalescingLimit: 16)
        for _ in 0..<4 { try queue.enqueue(line: Array("0123456789".utf8)) }
        #expect(queue.chunkCount == 2)
    }

    @Test func partialWritesKeepTheRestAndSendDescriptorsOnce() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            try left.setSendBuffer(4096)
            let big = String(repeating: "x", count: 50_000)
            var queue = OutboundQueue()
            var expected: [ReadLine] = []
            for index in 0..<6 {
                let withDescriptor = "{\"n\":\(index),\"fds\":1,\"pad\":\"\(big)\"}"
                try queue.enqueue(line: Array(withDescriptor.utf8), descriptors: [try watch.memfd("file \(index)")])
                let plain = "{\"n\":\(index),\"pad\":\"\(big)\"}"
                try queue.enqueue(line: Array(plain.utf8))
                expected += [.line(withDescriptor, ["file \(index)"]), .line(plain)]
            }
            var frames = InboundFrames(maxLineBytes: 1 << 20)
            var lines: [ReadLine] = []
            var blocked = 0
            var lastQueued = queue.queuedByteCount
            while try queue.write(to: left) == .wouldBlock {
                blocked += 1
                #expect(queue.queuedByteCount < lastQueued, "each round writes something")
                lastQueued = queue.queuedByteCount
                lines += try frames.readAvailable(from: right, maxBytes: 3000)
                try #require(blocked < 10_000)
            }
            lines += try frames.readAvailable(from: right, maxBytes: 3000)
            #expect(blocked > 0, "the small send buffer must force partial writes")
            #expect(lines == expected)
        }
    }

    @Test func droppedOrClosedQueuesCloseTheirDescriptors() throws {
        try expectNoLeaks { watch in
            var queue = OutboundQueue()
            try queue.enqueue(line: Array("{\"fds\":2}".utf8), descriptors: [try watch.memfd(), try watch.memfd()])
            #expect(watch.openCount == 2)
            queue.close()
            #expect(watch.openCount == 0)
            #expect(queue.isEmpty && queue.queuedDescriptorCount == 0)

            var dropped = OutboundQueue()
            try dropped.enqueue(line: Array("{\"fds\":1}".utf8), descriptors: [try watch.memfd()])
            #expect(watch.openCount == 1)
            _ = consume dropped
            #expect(watch.openCount == 0)
        }
    }

    @Test func aClosedPeerIsAnErrorAndTheQueueStays() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            try right.close()
            var queue = OutboundQueue()
            try queue.enqueue(line: Array("{\"fds\":1}".utf8), descriptors: [try watch.memfd()])
            let error = #expect(throws: SocketError.self) { try queue.write(to: left) }
            #expect(error?.isPeerGone == true)
            #expect(queue.queuedDescriptorCount == 1)
        }
    }

    @Test func tooManyDescriptorsForOneLineAreRefused() throws {
        try expectNoLeaks { watch in
            let file = try watch.memfd()
            let descriptors = try (0...UnixStreamSocket.maxDescriptorsPerMessage).map { _ in try file.duplicate() }
            var queue = OutboundQueue()
            #expect(throws: SocketError.tooManyDescriptors(count: 254, maximum: 253)) {
                try queue.enqueue(line: Array("{}".utf8), descriptors: descriptors)
            }
            #expect(queue.queuedByteCount == 0)
        }
    }
}
