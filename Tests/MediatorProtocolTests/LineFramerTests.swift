import Testing

@testable import MediatorProtocol

/// A small deterministic generator (SplitMix64), so that failures reproduce.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// What comes out of the framer.
private enum Output: Equatable, CustomStringConvertible {
    case frame([UInt8])
    case tooLarge

    static func text(_ text: String) -> Output { .frame(Array(text.utf8)) }

    var description: String {
        switch self {
        case .frame(let bytes): return "frame(\(String(decoding: bytes, as: UTF8.self).debugDescription))"
        case .tooLarge: return "tooLarge"
        }
    }
}

/// Drives a `LineFramer` the way `Transport/LineFrameDecoder.swift` does with
/// NIO's accumulating buffer: append what arrives, call `next` on the readable
/// bytes, drop `consumed` bytes after every step, and go on while the step is
/// a frame or tooLarge and bytes remain; stop at needMore until more bytes arrive.
private struct Harness {
    var framer: LineFramer
    var buffer: [UInt8] = []
    var outputs: [Output] = []
    /// Every call to `next`, for checks on `consumed`.
    var steps: [LineFramer.Step] = []

    init(max: Int) { framer = LineFramer(maxFrameBytes: max) }

    mutating func feed(_ chunk: some Collection<UInt8>) {
        buffer.append(contentsOf: chunk)
        // NIO's ByteToMessageHandler calls `decode` only while bytes are readable.
        while !buffer.isEmpty {
            let step = buffer.withUnsafeBytes { framer.next($0) }
            steps.append(step)
            switch step {
            case .frame(let start, let length, let consumed):
                precondition(start >= 0 && length > 0 && start + length <= consumed && consumed <= buffer.count)
                outputs.append(.frame(Array(buffer[start..<(start + length)])))
                buffer.removeFirst(consumed)
            case .tooLarge(let consumed):
                precondition(consumed >= 0 && consumed <= buffer.count)
                outputs.append(.tooLarge)
                buffer.removeFirst(consumed)
            case .needMore(let consumed):
                precondition(consumed >= 0 && consumed <= buffer.count)
                buffer.removeFirst(consumed)
                return
            }
        }
    }

    static func run(_ stream: [UInt8], max: Int, chunks: [Int]) -> Harness {
        var harness = Harness(max: max)
        var index = 0
        for size in chunks {
            let end = Swift.min(index + size, stream.count)
            harness.feed(stream[index..<end])
            index = end
        }
        if index < stream.count { harness.feed(stream[index...]) }
        return harness
    }

    static func whole(_ stream: [UInt8], max: Int) -> [Output] {
        run(stream, max: max, chunks: [stream.count]).outputs
    }

    static func byteByByte(_ stream: [UInt8], max: Int) -> [Output] {
        run(stream, max: max, chunks: Array(repeating: 1, count: stream.count)).outputs
    }

    static func randomChunks(_ stream: [UInt8], max: Int, seed: UInt64, largest: Int) -> [Output] {
        var generator = SplitMix64(seed: seed)
        var chunks: [Int] = []
        var total = 0
        while total < stream.count {
            // Include empty reads: the decoder may be called with nothing new.
            let size = Int.random(in: 0...largest, using: &generator)
            chunks.append(size)
            total += size
        }
        return run(stream, max: max, chunks: chunks).outputs
    }
}

/// The contract's framing, written the obvious way over the whole stream.
/// Blank lines (only spaces and tabs) are skipped like empty ones; one over
/// the limit is still too large (the framer reports that before its LF).
private func reference(_ stream: [UInt8], max: Int) -> [Output] {
    var outputs: [Output] = []
    var lines = stream.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
    let trailing = lines.removeLast()  // bytes after the last LF: no frame yet
    for var line in lines {
        if line.last == 0x0D { line.removeLast() }
        if line.isEmpty { continue }
        if line.count > max {
            outputs.append(.tooLarge)
        } else if !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
            outputs.append(.frame(line))
        }
    }
    // An unfinished line already over the limit, whatever a later CR LF would strip.
    var unfinished = trailing
    if unfinished.last == 0x0D { unfinished.removeLast() }
    if unfinished.count > max { outputs.append(.tooLarge) }
    return outputs
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite struct LineFramerTests {
    // MARK: - Basics

    @Test func singleFrames() {
        #expect(Harness.whole(bytes("{}\n"), max: 100) == [.text("{}")])
        #expect(Harness.whole(bytes("{}\r\n"), max: 100) == [.text("{}")])
        #expect(Harness.whole(bytes("a\nb\r\nc\n"), max: 100) == [.text("a"), .text("b"), .text("c")])
        #expect(Harness.whole(bytes("abc"), max: 100) == [])
        #expect(Harness.whole(bytes(""), max: 100) == [])
    }

    @Test func emptyLinesAndBareCRLFAreSkipped() {
        let stream = bytes("\n\r\n\n\r\n{\"a\":1}\n\n\r\n\n{\"b\":2}\r\n\r\n\n")
        let expected: [Output] = [.text(#"{"a":1}"#), .text(#"{"b":2}"#)]
        #expect(Harness.whole(stream, max: 64) == expected)
        #expect(Harness.byteByByte(stream, max: 64) == expected)
        #expect(Harness.whole(bytes("\n\n\n\r\n\r\n"), max: 64) == [])
        #expect(Harness.byteByByte(bytes("\n\n\n\r\n\r\n"), max: 64) == [])
        // Only LF ends a line; a lone CR is frame content, and only one CR before LF is stripped.
        #expect(Harness.whole(bytes("a\rb\n"), max: 64) == [.text("a\rb")])
        #expect(Harness.whole(bytes("\r\r\n"), max: 64) == [.text("\r")])
        #expect(Harness.whole(bytes("x\r\r\n"), max: 64) == [.text("x\r")])
        #expect(Harness.whole(bytes("\r"), max: 64) == [])
    }

    // MARK: - Blank lines

    /// Lines of only spaces and tabs, before LF or CR LF: skipped like empty lines.
    static let blankLines = [" \n", "\t\n", " \r\n", "\t\r\n", " \t \t\n", "        \t\r\n", String(repeating: " ", count: 17) + "\n"]

    @Test(arguments: blankLines)
    func blankLineIsSkipped(line: String) {
        let stream = bytes(line + #"{"a":1}"# + "\n" + line + line + #"{"b":2}"# + "\r\n" + line)
        let expected: [Output] = [.text(#"{"a":1}"#), .text(#"{"b":2}"#)]
        #expect(Harness.whole(stream, max: 64) == expected)
        #expect(Harness.byteByByte(stream, max: 64) == expected)
        #expect(Harness.whole(bytes(line), max: 64) == [])
        #expect(Harness.byteByByte(bytes(line), max: 64) == [])
    }

    @Test func linesWithMoreThanSpacesAndTabsAreFrames() {
        // Whitespace around JSON is the parser's business, not the framer's.
        #expect(Harness.byteByByte(bytes(" {}\n"), max: 64) == [.text(" {}")])
        #expect(Harness.byteByByte(bytes("\t{}\t\n"), max: 64) == [.text("\t{}\t")])
        #expect(Harness.byteByByte(bytes("{} \n"), max: 64) == [.text("{} ")])
        // Only a CR right before the LF is the terminator; elsewhere it is content.
        #expect(Harness.byteByByte(bytes(" \r \n"), max: 64) == [.text(" \r ")])
        #expect(Harness.byteByByte(bytes(" \r\r\n"), max: 64) == [.text(" \r")])
        // Other white space is not blank: vertical tab, form feed, NBSP.
        #expect(Harness.byteByByte(bytes(" \u{0B}\n"), max: 64) == [.text(" \u{0B}")])
        #expect(Harness.byteByByte(bytes("\u{0C}\n"), max: 64) == [.text("\u{0C}")])
        #expect(Harness.byteByByte(bytes(" \u{A0}\n"), max: 64) == [.text(" \u{A0}")])
        // A blank start and a non-blank last byte, across the eight-byte words.
        let late = String(repeating: " ", count: 15) + "x"
        #expect(Harness.whole(bytes(late + "\n"), max: 64) == [.text(late)])
        #expect(Harness.byteByByte(bytes(late + "\n"), max: 64) == [.text(late)])
    }

    @Test func blankLinesAtTheLimit() {
        let max = 8
        let atLimit = [UInt8](repeating: 0x20, count: max)
        let overLimit = [UInt8](repeating: 0x09, count: max + 1)
        // At the limit: skipped. Over it: too large, like any line, since that
        // is known before the LF arrives.
        let stream = atLimit + bytes("\r\n") + overLimit + bytes("\n") + bytes("ok\n")
        let expected: [Output] = [.tooLarge, .text("ok")]
        #expect(Harness.whole(stream, max: max) == expected)
        #expect(Harness.byteByByte(stream, max: max) == expected)
        #expect(reference(stream, max: max) == expected)
    }

    @Test func blankLinesAreConsumedWithTheNextFrame() {
        var framer = LineFramer(maxFrameBytes: 10)
        let stream = bytes(" \t\r\n \nab\n")
        let step = stream.withUnsafeBytes { framer.next($0) }
        #expect(step == .frame(start: 6, length: 2, consumed: 9))

        var second = LineFramer(maxFrameBytes: 10)
        let onlyBlank = bytes("\t \n  \r\n ")
        // The unfinished " " may still become a frame: it stays pending.
        #expect(onlyBlank.withUnsafeBytes { second.next($0) } == .needMore(consumed: 7))
        // The caller dropped 7 bytes; "x" and the LF follow the pending " ".
        #expect(bytes(" x\n").withUnsafeBytes { second.next($0) } == .frame(start: 0, length: 2, consumed: 3))
    }

    @Test(arguments: Array(UInt64(1)...20))
    func chunkingDoesNotMatterWithBlankLines(seed: UInt64) {
        let max = [1, 2, 8, 31, 64][Int(seed % 5)]
        let stream = Self.randomStream(seed: seed, max: max, blankLines: true)
        let expected = reference(stream, max: max)
        #expect(Harness.whole(stream, max: max) == expected, "whole, seed \(seed)")
        #expect(Harness.byteByByte(stream, max: max) == expected, "byte by byte, seed \(seed)")
        for chunkSeed in UInt64(0)..<10 {
            let got = Harness.randomChunks(stream, max: max, seed: seed &* 1000 &+ chunkSeed, largest: 7)
            #expect(got == expected, "seed \(seed), chunk seed \(chunkSeed)")
        }
    }

    @Test func stepValuesAreExact() {
        var framer = LineFramer(maxFrameBytes: 10)
        let stream = bytes("\n\r\nabc\r\ndef")
        let steps = stream.withUnsafeBytes { buffer -> [LineFramer.Step] in
            var steps = [framer.next(buffer)]
            let rest = UnsafeRawBufferPointer(rebasing: buffer[8...])
            steps.append(framer.next(rest))
            return steps
        }
        // Skipped empty lines are consumed together with the frame.
        #expect(steps[0] == .frame(start: 3, length: 3, consumed: 8))
        #expect(steps[1] == .needMore(consumed: 0))

        var second = LineFramer(maxFrameBytes: 10)
        let onlyEmpty = bytes("\n\r\n\nab")
        let step = onlyEmpty.withUnsafeBytes { second.next($0) }
        #expect(step == .needMore(consumed: 4))
        // The caller dropped 4 bytes; "ab" is still pending and its LF arrives.
        #expect(bytes("ab\n").withUnsafeBytes { second.next($0) } == .frame(start: 0, length: 2, consumed: 3))
        let empty: [UInt8] = []
        #expect(empty.withUnsafeBytes { second.next($0) } == .needMore(consumed: 0))
    }

    @Test func framesPointIntoTheBuffer() {
        var harness = Harness(max: 100)
        harness.feed(bytes("one\ntwo\r\n\nthree"))
        #expect(harness.outputs == [.text("one"), .text("two")])
        #expect(harness.buffer == bytes("three"))
        #expect(
            harness.steps == [
                .frame(start: 0, length: 3, consumed: 4), .frame(start: 0, length: 3, consumed: 5),
                .needMore(consumed: 1),
            ])
        harness.feed(bytes("\n"))
        #expect(harness.outputs.last == .text("three"))
        #expect(harness.buffer.isEmpty)
    }

    // MARK: - The exact limit

    static let limitCases: [(length: Int, terminator: String, tooLarge: Bool)] = [
        (7, "\n", false), (8, "\n", false), (9, "\n", true),
        (7, "\r\n", false), (8, "\r\n", false), (9, "\r\n", true),
        (10, "\n", true), (10, "\r\n", true), (100, "\n", true),
    ]

    @Test(arguments: limitCases)
    func limit(length: Int, terminator: String, tooLarge: Bool) {
        let max = 8
        let frame = [UInt8](repeating: UInt8(ascii: "x"), count: length)
        let good = bytes("ok")
        let stream = frame + bytes(terminator) + good + bytes(terminator)
        let expected: [Output] = tooLarge ? [.tooLarge, .frame(good)] : [.frame(frame), .frame(good)]
        #expect(Harness.whole(stream, max: max) == expected)
        #expect(Harness.byteByByte(stream, max: max) == expected)
        for seed in UInt64(0)..<20 {
            #expect(Harness.randomChunks(stream, max: max, seed: seed, largest: 5) == expected, "seed \(seed)")
        }
    }

    @Test func crlfAtTheLimitWaitsForTheLF() {
        // max bytes plus a CR: not over the limit yet, since the CR may end the line.
        var harness = Harness(max: 4)
        harness.feed(bytes("abcd\r"))
        #expect(harness.outputs == [])
        #expect(harness.steps.last == .needMore(consumed: 0))
        harness.feed(bytes("\n"))
        #expect(harness.outputs == [.text("abcd")])

        // The same bytes followed by something other than LF: the CR was content.
        var other = Harness(max: 4)
        other.feed(bytes("abcd\r"))
        other.feed(bytes("e"))
        #expect(other.outputs == [.tooLarge])
        other.feed(bytes("fgh\nok\n"))
        #expect(other.outputs == [.tooLarge, .text("ok")])

        // max + 1 bytes with no CR: over the limit at once, before any LF.
        var early = Harness(max: 4)
        early.feed(bytes("abcde"))
        #expect(early.outputs == [.tooLarge])
        #expect(early.buffer.isEmpty)
    }

    @Test func zeroLimit() {
        let stream = bytes("\n\r\na\n\r\nb\r\n\n")
        #expect(Harness.whole(stream, max: 0) == [.tooLarge, .tooLarge])
        #expect(Harness.byteByByte(stream, max: 0) == [.tooLarge, .tooLarge])
    }

    // MARK: - Oversized frames

    @Test func oversizedThenGoodOnTheSameStream() {
        let big = [UInt8](repeating: UInt8(ascii: "y"), count: 50)
        let stream = big + bytes("\n{\"id\":1}\n")
        let expected: [Output] = [.tooLarge, .text(#"{"id":1}"#)]
        #expect(Harness.whole(stream, max: 10) == expected)
        #expect(Harness.byteByByte(stream, max: 10) == expected)
        for seed in UInt64(100)..<150 {
            #expect(Harness.randomChunks(stream, max: 10, seed: seed, largest: 17) == expected, "seed \(seed)")
        }
        // Also with CR LF and empty lines around.
        let crlf = bytes("\r\n") + big + bytes("\r\n\r\n{\"id\":2}\r\n")
        #expect(Harness.byteByByte(crlf, max: 10) == [.tooLarge, .text(#"{"id":2}"#)])
        #expect(Harness.whole(crlf, max: 10) == [.tooLarge, .text(#"{"id":2}"#)])
    }

    @Test func oversizedInManyChunksWithoutLF() {
        var harness = Harness(max: 16)
        harness.feed(bytes("good\n"))
        for _ in 0..<1000 {
            harness.feed([UInt8](repeating: UInt8(ascii: "z"), count: 7))
        }
        // Reported once, as soon as the limit was passed; nothing kept in memory.
        #expect(harness.outputs == [.text("good"), .tooLarge])
        #expect(harness.buffer.isEmpty)
        #expect(harness.steps.filter { if case .tooLarge = $0 { true } else { false } }.count == 1)
        // Still discarding: a CR, more bytes, then the LF ends the bad line.
        harness.feed(bytes("zz\rzz"))
        #expect(harness.outputs == [.text("good"), .tooLarge])
        harness.feed(bytes("zz\nnext\n"))
        #expect(harness.outputs == [.text("good"), .tooLarge, .text("next")])
        #expect(harness.buffer.isEmpty)
    }

    @Test func oversizedInOneReadWithoutLF() {
        var harness = Harness(max: 16)
        harness.feed([UInt8](repeating: UInt8(ascii: "z"), count: 10_000))
        #expect(harness.outputs == [.tooLarge])
        #expect(harness.buffer.isEmpty)
        harness.feed([UInt8](repeating: UInt8(ascii: "z"), count: 10_000) + bytes("\n"))
        #expect(harness.outputs == [.tooLarge])
        harness.feed(bytes("{}\n"))
        #expect(harness.outputs == [.tooLarge, .text("{}")])
    }

    @Test func oversizedFramesBackToBack() {
        let big = [UInt8](repeating: UInt8(ascii: "w"), count: 20)
        let stream = big + bytes("\n") + big + bytes("\r\n") + bytes("a\n") + big + bytes("\n\n") + big
        let expected: [Output] = [.tooLarge, .tooLarge, .text("a"), .tooLarge, .tooLarge]
        #expect(Harness.whole(stream, max: 5) == expected)
        #expect(Harness.byteByByte(stream, max: 5) == expected)
        #expect(reference(stream, max: 5) == expected)
    }

    @Test func eachByteIsScannedOnceWhileWaiting() {
        // Only the reported steps are observable; the framer must still find the LF
        // after many partial reads that each add one byte.
        var harness = Harness(max: 5000)
        let body = [UInt8](repeating: UInt8(ascii: "q"), count: 4000)
        for byte in body { harness.feed([byte]) }
        #expect(harness.outputs.isEmpty)
        #expect(harness.buffer.count == 4000)
        harness.feed(bytes("\n"))
        #expect(harness.outputs == [.frame(body)])
    }

    // MARK: - Any chunking gives the same frames

    /// `blankLines` adds lines of spaces and tabs (some over the limit); without
    /// it the streams are the ones the seeds have always given.
    static func randomStream(seed: UInt64, max: Int, blankLines: Bool = false) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        var stream: [UInt8] = []
        for _ in 0..<60 {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0: stream += bytes("\n")
            case 1: stream += bytes("\r\n")
            case 2 where blankLines:
                let count = Int.random(in: 1...(max + 2), using: &generator)
                for _ in 0..<count { stream.append(Bool.random(using: &generator) ? 0x20 : 0x09) }
                stream += Bool.random(using: &generator) ? bytes("\r\n") : bytes("\n")
            default:
                // Lengths cluster around the limit.
                let length = Int.random(in: Swift.max(1, max - 3)...(max + 3), using: &generator)
                let small = Int.random(in: 1...Swift.max(1, max / 2), using: &generator)
                let count = Bool.random(using: &generator) ? length : small
                var line: [UInt8] = []
                for _ in 0..<count {
                    // Content bytes include CR and non-ASCII but never LF.
                    let pool: [UInt8] = [0x61, 0x62, 0x7B, 0x7D, 0x22, 0x0D, 0x20, 0xC3, 0xA9, 0xFF]
                    line.append(pool.randomElement(using: &generator)!)
                }
                stream += line
                stream += Bool.random(using: &generator) ? bytes("\r\n") : bytes("\n")
            }
        }
        // Sometimes an unfinished line at the end.
        if Bool.random(using: &generator) {
            stream += [UInt8](repeating: 0x61, count: Int.random(in: 0...(max + 3), using: &generator))
        }
        return stream
    }

    @Test(arguments: Array(UInt64(1)...40))
    func chunkingDoesNotMatter(seed: UInt64) {
        let max = [1, 2, 8, 31, 64][Int(seed % 5)]
        let stream = Self.randomStream(seed: seed, max: max)
        let expected = reference(stream, max: max)
        #expect(expected.contains(.tooLarge), "seed \(seed): the stream should exercise the limit")
        #expect(Harness.whole(stream, max: max) == expected, "whole, seed \(seed)")
        #expect(Harness.byteByByte(stream, max: max) == expected, "byte by byte, seed \(seed)")
        for chunkSeed in UInt64(0)..<10 {
            for largest in [2, 7, 100] {
                let got = Harness.randomChunks(stream, max: max, seed: seed &* 1000 &+ chunkSeed, largest: largest)
                #expect(got == expected, "seed \(seed), chunk seed \(chunkSeed), largest \(largest)")
            }
        }
    }

    @Test func realisticMessagesByteByByte() {
        let messages = [
            #"{"id":7,"target":"Detail","action":"show","params":{"title":"Hi"},"timeout_ms":5000}"#,
            #"{"id":7,"result":{"shown":true}}"#,
            #"{"event":"mediator.registered","data":{"target":"Detail","instance":3,"pid":4121}}"#,
            #"{"id":"é😀","error":{"code":"timeout","message":"no response"}}"#,
        ]
        var stream: [UInt8] = []
        for (index, message) in messages.enumerated() {
            stream += bytes(message) + bytes(index % 2 == 0 ? "\n" : "\r\n")
        }
        let expected = messages.map { Output.text($0) }
        #expect(Harness.byteByByte(stream, max: 1 << 20) == expected)
        #expect(Harness.whole(stream, max: 1 << 20) == expected)
        for seed in UInt64(0)..<20 {
            #expect(Harness.randomChunks(stream, max: 1 << 20, seed: seed, largest: 13) == expected)
        }
    }
}
