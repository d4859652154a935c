import SocketTesting
import Testing

@testable import MediatorSocket

/// What a reader made of one line: its text, and the contents of the
/// files its descriptors point at, or the mismatch.
struct ReadLine: Equatable, CustomStringConvertible {
    var text: String
    var files: [String]?
    var mismatch: String?

    var description: String { "\(text) \(files.map { "\($0)" } ?? mismatch ?? "")" }

    static func line(_ text: String, _ files: [String] = []) -> ReadLine { ReadLine(text: text, files: files) }
    static func mismatch(_ text: String, declared: Int, arrived: Int, truncated: Bool = false) -> ReadLine {
        ReadLine(text: text, mismatch: "declared \(declared), arrived \(arrived), truncated \(truncated)")
    }
    static let tooLarge = ReadLine(text: "too large")
}

/// The `fds` a test line declares (`"fds":N`), as the protocol layer would parse it.
func declaredDescriptors(_ line: InboundLine) -> Int {
    let key = Array("\"fds\":".utf8)
    guard let at = line.bytes.indices.first(where: { line.bytes[$0...].starts(with: key) }) else { return 0 }
    let digits = line.bytes[(at + key.count)...].prefix { $0 >= 0x30 && $0 <= 0x39 }
    return Int(String(decoding: digits, as: UTF8.self)) ?? 0
}

extension InboundFrames {
    /// Reads `maxBytes` at a time until the socket has no more, taking
    /// every line's declared descriptors as it comes.
    mutating func readAvailable(from socket: UnixStreamSocket, maxBytes: Int, descriptorCapacity: Int = 253) throws -> [ReadLine] {
        var lines: [ReadLine] = []
        while case .bytes = try receive(from: socket, maxBytes: maxBytes, descriptorCapacity: descriptorCapacity) {
            while let frame = nextFrame() {
                guard case .line(let line) = frame else {
                    lines.append(.tooLarge)
                    continue
                }
                let text = String(decoding: line.bytes, as: UTF8.self)
                switch takeDescriptors(declaredDescriptors(line), for: line) {
                case .descriptors(let descriptors):
                    lines.append(.line(text, try descriptors.map(LeakWatch.contents(of:))))
                case .mismatch(let declared, let arrived, let truncated):
                    lines.append(.mismatch(text, declared: declared, arrived: arrived, truncated: truncated))
                }
            }
        }
        return lines
    }
}

@Suite struct InboundFramesTests {
    /// Sends each text with one sendmsg, with memfds holding the given
    /// contents, then reads `readSize` bytes at a time: the lines read, and
    /// how many descriptors no line could own. Checks that nothing leaks.
    static func read(
        _ sends: [(text: String, files: [String])], maxLineBytes: Int = 1024, readSize: Int, descriptorCapacity: Int = 253
    ) throws -> (lines: [ReadLine], discarded: Int) {
        var read: (lines: [ReadLine], discarded: Int) = ([], 0)
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            for send in sends {
                try left.sendAll(send.text, descriptors: try send.files.map { try watch.memfd($0) })
            }
            var frames = InboundFrames(maxLineBytes: maxLineBytes)
            read.lines = try frames.readAvailable(from: right, maxBytes: readSize, descriptorCapacity: descriptorCapacity)
            read.discarded = frames.discardedDescriptorCount
            #expect(frames.queuedDescriptorCount == 0)
        }
        return read
    }

    /// Each message its own sendmsg, as the protocol says; the fourth
    /// one's sendmsg also carries a line without descriptors after it.
    static let messages: [(text: String, files: [String])] = [
        ("{\"a\":1}\n", []), ("{\"b\":2,\"fds\":2}\n", ["b0", "b1"]), ("\n{\"c\":3}\r\n", []),
        ("{\"d\":4,\"fds\":1}\n{\"e\":5}\n", ["d0"]), ("{\"f\":6,\"fds\":1}\n", ["f0"]),
    ]

    @Test(arguments: [1, 2, 3, 5, 7, 11, 16, 17, 40, 64, 4096])
    func descriptorsArriveWithTheirLineInEverySplit(readSize: Int) throws {
        let read = try Self.read(Self.messages, readSize: readSize)
        #expect(read.lines == [
            .line("{\"a\":1}"), .line("{\"b\":2,\"fds\":2}", ["b0", "b1"]), .line("{\"c\":3}"),
            .line("{\"d\":4,\"fds\":1}", ["d0"]), .line("{\"e\":5}"), .line("{\"f\":6,\"fds\":1}", ["f0"]),
        ])
        #expect(read.discarded == 0)
    }

    @Test func twoHundredFiftyThreeDescriptorsForOneLine() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            let file = try watch.memfd("many")
            try left.sendAll("{\"fds\":253}\n", descriptors: try (0..<253).map { _ in try file.duplicate() })
            var frames = InboundFrames(maxLineBytes: 1024)
            let lines = try frames.readAvailable(from: right, maxBytes: 5)
            #expect(lines == [.line("{\"fds\":253}", Array(repeating: "many", count: 253))])
        }
    }

    @Test func aShortCountIsAMismatchAndTheNextLineKeepsItsOwn() throws {
        let read = try Self.read([("{\"fds\":2}\n", ["only"]), ("{\"fds\":1}\n", ["next"])], readSize: 4096)
        #expect(read.lines == [.mismatch("{\"fds\":2}", declared: 2, arrived: 1), .line("{\"fds\":1}", ["next"])])
    }

    @Test func undeclaredDescriptorsAreAMismatchOfTheirLine() throws {
        let read = try Self.read([("{\"no\":0}\n", ["stray"]), ("{\"fds\":1}\n", ["next"])], readSize: 3)
        #expect(read.lines == [.mismatch("{\"no\":0}", declared: 0, arrived: 1), .line("{\"fds\":1}", ["next"])])
    }

    @Test func aTooLargeLinesDescriptorsAreClosed() throws {
        let long = "{\"fds\":1,\"long\":\"" + String(repeating: "x", count: 100) + "\"}\n"
        let read = try Self.read([(long, ["lost"]), ("{\"fds\":1}\n", ["next"])], maxLineBytes: 32, readSize: 8)
        #expect(read.lines == [.tooLarge, .line("{\"fds\":1}", ["next"])])
        #expect(read.discarded == 1)
    }

    @Test func descriptorsSentInsideALineBelongToNoLine() throws {
        let read = try Self.read([("{\"fds\":1,", []), ("\"rest\":0}\n{\"next\":1}\n", ["inside"])], readSize: 4)
        #expect(read.lines == [.mismatch("{\"fds\":1,\"rest\":0}", declared: 1, arrived: 0), .line("{\"next\":1}")])
        #expect(read.discarded == 1)
    }

    @Test func truncatedDescriptorsAreAMismatch() throws {
        let read = try Self.read([("{\"fds\":3}\n", ["", "", ""]), ("{\"fds\":1}\n", ["next"])], readSize: 4096, descriptorCapacity: 2)
        #expect(read.lines == [.mismatch("{\"fds\":3}", declared: 3, arrived: 0, truncated: true), .line("{\"fds\":1}", ["next"])])
    }

    @Test func queuedDescriptorsAreClosedWithTheFrames() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            try left.sendAll("{\"fds\":1}\n{\"partial", descriptors: [try watch.memfd("queued")])
            var frames = InboundFrames(maxLineBytes: 1024)
            #expect(try frames.receive(from: right) == .bytes(19))
            #expect(frames.queuedDescriptorCount == 1)
            #expect(watch.openCount == 3)
            frames.close()
            #expect(watch.openCount == 2, "the two sockets only")
            #expect(frames.bufferedByteCount == 0)

            try left.sendAll("{\"fds\":1}\n", descriptors: [try watch.memfd("dropped")])
            var dropped = InboundFrames(maxLineBytes: 1024)
            _ = try dropped.receive(from: right)
            #expect(dropped.queuedDescriptorCount == 1)
            _ = consume dropped
            #expect(watch.openCount == 2, "the two sockets only")
        }
    }

    @Test func endOfStreamAfterTheLastLine() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            try left.sendAll("{\"a\":1}\n{\"cut")
            try left.close()
            var frames = InboundFrames(maxLineBytes: 1024)
            #expect(try frames.readAvailable(from: right, maxBytes: 4096) == [.line("{\"a\":1}")])
            #expect(try frames.receive(from: right) == .endOfStream)
            #expect(frames.bufferedByteCount == 5)
        }
    }

    @Test func aLongLinesBufferIsGivenBackOnceRead() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            let long = "{\"long\":\"" + String(repeating: "x", count: 10_000) + "\"}"
            var frames = InboundFrames(maxLineBytes: 1 << 20, readSize: 1000)
            try left.sendAll(long)
            while try frames.receive(from: right) != .wouldBlock {
                #expect(frames.nextFrame() == nil)
            }
            let grown = frames.bufferCapacity
            #expect(grown > 10_000)
            try left.sendAll("\n")
            #expect(try frames.readAvailable(from: right, maxBytes: 1000) == [.line(long)])
            let capacity = frames.bufferCapacity
            #expect(capacity <= 1000, "back to one read's worth")
        }
    }

    /// Reads start small and grow only while they fill up: an idle
    /// connection after a short line, and one after a burst once it is read,
    /// keep no large buffer (thousands of idle connections each kept 64 KiB).
    @Test func readsAdaptTheirSizeAndAnIdleConnectionKeepsLittle() throws {
        try expectNoLeaks { watch in
            let (left, right) = try watchedPair(watch)
            var frames = InboundFrames(maxLineBytes: 1 << 20)
            try left.sendAll("{\"short\":1}\n")
            #expect(try frames.receive(from: right) == .bytes(12))
            #expect(frames.nextFrame() != nil)
            #expect(frames.bufferCapacity <= InboundFrames.minimumReadSize)
            // A burst of many lines: reads grow to fill, then the buffer goes once read.
            let line = "{\"n\":\"" + String(repeating: "y", count: 90) + "\"}"
            try left.sendAll(String(repeating: line + "\n", count: 1000))
            var lines = 0
            var largestRead = 0
            while case .bytes(let count) = try frames.receive(from: right) {
                largestRead = max(largestRead, count)
                while frames.nextFrame() != nil { lines += 1 }
            }
            #expect(lines == 1000)
            #expect(largestRead > InboundFrames.minimumReadSize, "reads grew while they filled up")
            #expect(frames.bufferCapacity <= 2 * InboundFrames.minimumReadSize)
        }
    }
}
