// Fuzz regression tests, and the invariants that the fuzz targets check.
//
// This file is compiled twice:
// - by `swift test`, as part of MediatorProtocolTests: every file in
//   Tests/Fuzz/crashes/ and Tests/Fuzz/corpus/*/ goes through every
//   target's invariants, so a crash input kept by Tests/Fuzz/run-fuzz.sh
//   is a regression test from then on;
// - by Tests/Fuzz/run-fuzz.sh, with `-D MEDIATOR_FUZZ`, into each libFuzzer
//   harness (Tests/Fuzz/Fuzz*.swift) together with the Protocol sources.
//
// So the fuzzer and the tests check the same invariants, written once.
// Everything outside the `#if` blocks is shared and must use only the
// public API of MediatorProtocol and the standard library.

#if !MEDIATOR_FUZZ
import Foundation
import MediatorProtocol
import Testing

@Suite struct FuzzRegressionTests {
    static let inputs = FuzzInput.all()

    /// A wrong path must not pass silently by finding no input at all.
    @Test func seedCorpusIsFound() {
        for target in FuzzTarget.allCases {
            #expect(
                Self.inputs.contains { $0.path.hasPrefix("corpus/\(target.rawValue)/") },
                "no seed input under \(FuzzInput.folder.path)/corpus/\(target.rawValue)")
        }
    }

    /// Every target's invariants on every kept input: any input is valid for any target.
    @Test(arguments: FuzzRegressionTests.inputs)
    func invariantsHold(_ input: FuzzInput) {
        for target in FuzzTarget.allCases {
            let failures = target.check(input.bytes)
            #expect(failures.isEmpty, "\(target.rawValue): \(failures.joined(separator: "; "))")
        }
    }

    /// The invariants themselves catch what they are meant to catch.
    @Test func invariantsReportViolations() {
        var check = FuzzCheck()
        FuzzInvariants.checkFrame(Array(#"{"target":"a","action":"b"}"#.utf8), &check)
        #expect(check.failures.isEmpty)
        check.expect(false, "deliberate")
        #expect(check.failures == ["deliberate"])
    }

    @Test func loneSurrogateInAResultKeepsTheInvariants() {
        var check = FuzzCheck()
        FuzzInvariants.checkFrame(Array(#"{"id":1,"result":["\ud800"]}"#.utf8), &check)
        #expect(check.failures.isEmpty)
    }
}

/// One file of the seed corpus or of the kept crash inputs.
struct FuzzInput: Sendable, CustomTestStringConvertible {
    /// Relative to Tests/Fuzz, such as `corpus/framing/request` or `crashes/framing-crash-…`.
    let path: String
    let bytes: [UInt8]
    var testDescription: String { path }

    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func all() -> [FuzzInput] {
        let files = FileManager.default
        var folders = ["crashes"]
        let corpora = (try? files.contentsOfDirectory(atPath: folder.appendingPathComponent("corpus").path)) ?? []
        folders += corpora.sorted().filter { !$0.hasPrefix(".") }.map { "corpus/" + $0 }
        var inputs: [FuzzInput] = []
        for relative in folders {
            let names = (try? files.contentsOfDirectory(atPath: folder.appendingPathComponent(relative).path)) ?? []
            for name in names.sorted() where !name.hasPrefix(".") && !name.hasSuffix(".md") {
                let url = folder.appendingPathComponent(relative).appendingPathComponent(name)
                guard let data = try? Data(contentsOf: url) else { continue }
                inputs.append(FuzzInput(path: relative + "/" + name, bytes: [UInt8](data)))
            }
        }
        return inputs
    }
}
#endif

#if MEDIATOR_FUZZ
/// The body of each `LLVMFuzzerTestOneInput`: a broken invariant traps, so
/// that libFuzzer reports the input and writes it out.
func fuzzOne(_ target: FuzzTarget, _ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let failures = target.check(Array(UnsafeBufferPointer(start: data, count: size)))
    if !failures.isEmpty {
        fatalError("fuzz \(target.rawValue): invariant broken:\n" + failures.joined(separator: "\n"))
    }
    return 0
}
#endif

// MARK: - Shared by the fuzz harnesses and the tests

/// A fuzz target, named as in Tests/Fuzz/corpus/<name>/ and run-fuzz.sh.
enum FuzzTarget: String, CaseIterable, Sendable {
    /// Byte 0 picks the frame limit, byte 1 the read sizes, the rest is the
    /// byte stream; every frame goes to JSONParser and EnvelopeParser.
    case framing
    /// The input, as UTF-8 text, is a `mediator/open` URL.
    case url
    /// `SCHEMA NUL VALUE` (both JSON); without a NUL the input is both.
    case schema

    /// The invariants that do not hold for `input`; empty when all hold.
    func check(_ input: [UInt8]) -> [String] {
        var check = FuzzCheck()
        switch self {
        case .framing: FuzzInvariants.checkFraming(input, &check)
        case .url: FuzzInvariants.checkURL(input, &check)
        case .schema: FuzzInvariants.checkSchema(input, &check)
        }
        return check.failures
    }
}

/// Collects the invariants that do not hold.
struct FuzzCheck {
    var failures: [String] = []

    mutating func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { failures.append(message()) }
    }
}

/// SplitMix64: read sizes that depend only on the input.
struct FuzzSplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

enum FuzzInvariants {
    // MARK: Framing

    /// The libraries' fast paths for mediatord's usual frames
    /// (EnvelopeParser+PlainFrames.swift) read a frame exactly as the
    /// general parser does, or leave it to it: never a reading of their own.
    static func checkPlainPaths(_ frame: [UInt8], _ check: inout FuzzCheck) {
        var envelope = Envelope(kind: .request)
        var payloads = EnvelopeParser.Payloads()
        var names = EnvelopeParser.RequestNames()
        let read = withExactCopy(frame) {
            EnvelopeParser.parsePlainResult($0, intoFresh: &envelope, result: &payloads.result)
                || EnvelopeParser.parsePlainRequest($0, intoFresh: &envelope, params: &payloads.params, names: &names)
        }
        guard read else { return }
        var general = Envelope(kind: .request)
        var generalPayloads = EnvelopeParser.Payloads()
        let failure = withExactCopy(frame) { EnvelopeParser.parse($0, intoFresh: &general, decoding: &generalPayloads) }
        check.expect(failure == nil, "a fast path reads a frame the general parser refuses: \(String(describing: failure))")
        check.expect(envelope == general, "a fast path reads another envelope than the general parser")
        check.expect(
            payloads.result == generalPayloads.result && payloads.params == generalPayloads.params,
            "a fast path decodes another result or params than the general parser")
    }

    enum Output: Equatable {
        case frame([UInt8])
        case tooLarge
    }

    /// Read sizes chosen by byte 1: the largest read (0 is allowed: the
    /// decoder may be called again with nothing new) and the seed.
    static let largestReads = [1, 2, 3, 7, 16, 64, 512, 4096]

    static func checkFraming(_ input: [UInt8], _ check: inout FuzzCheck) {
        guard input.count >= 2 else { return }
        // Byte 0: below 0x80 a roomy limit (JSON frames get through), else 1...128.
        let limit = input[0] < 0x80 ? 4096 : Int(input[0] & 0x7F) + 1
        let stream = Array(input[2...])

        var random = FuzzSplitMix64(state: UInt64(input[1] >> 3))
        let largest = largestReads[Int(input[1] & 7)]
        var reads: [Int] = []
        var total = 0
        while total < stream.count {
            let size = Int(random.next() % UInt64(largest + 1))
            reads.append(size)
            total += size
        }

        let expected = referenceFrames(stream, limit: limit)
        let whole = drive(stream, limit: limit, reads: [stream.count], &check)
        check.expect(whole == expected, "limit \(limit), one read: \(describe(whole)), expected \(describe(expected))")
        let chunked = drive(stream, limit: limit, reads: reads, &check)
        check.expect(
            chunked == expected,
            "limit \(limit), reads \(reads): \(describe(chunked)), expected \(describe(expected))")

        for case .frame(let frame) in whole { checkFrame(frame, &check) }
    }

    /// The contract's framing written the obvious way over the whole stream:
    /// LF ends a frame, one CR before it is dropped, empty lines and blank
    /// ones (only spaces and tabs) within the limit are skipped,
    /// a frame over `limit` is reported once; an unfinished last line is
    /// reported only when it is already over the limit whatever CR LF follows.
    static func referenceFrames(_ stream: [UInt8], limit: Int) -> [Output] {
        var outputs: [Output] = []
        var lines = stream.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        var unfinished = lines.removeLast()
        for var line in lines {
            if line.last == 0x0D { line.removeLast() }
            if line.isEmpty { continue }
            if line.count > limit {
                outputs.append(.tooLarge)
            } else if !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
                outputs.append(.frame(line))
            }
        }
        if unfinished.last == 0x0D { unfinished.removeLast() }
        if unfinished.count > limit { outputs.append(.tooLarge) }
        return outputs
    }

    /// Drives a LineFramer as Transport/LineFrameDecoder.swift does under
    /// NIO's ByteToMessageHandler: append each read, call `next` on the
    /// unconsumed bytes, drop `consumed`, go on after a frame or tooLarge
    /// while bytes remain, stop at needMore until the next read.
    static func drive(_ stream: [UInt8], limit: Int, reads: [Int], _ check: inout FuzzCheck) -> [Output] {
        var framer = LineFramer(maxFrameBytes: limit)
        var buffer: [UInt8] = []
        var outputs: [Output] = []
        var index = 0
        for size in reads {
            let end = min(index + size, stream.count)
            buffer.append(contentsOf: stream[index..<end])
            index = end
            // One exact-size copy per read: the framer sees the pending bytes
            // end where the allocation ends (see withExactCopy).
            let ok = withExactCopy(buffer) { copy -> Bool in
                var offset = 0
                while offset < copy.count {
                    let pending = UnsafeRawBufferPointer(rebasing: copy[offset...])
                    let step = framer.next(pending)
                    switch step {
                    case .frame(let start, let length, let consumed):
                        guard start >= 0, length > 0, length <= limit, start + length <= consumed,
                            consumed <= pending.count
                        else {
                            check.expect(false, "bad \(step) for \(pending.count) pending bytes, limit \(limit)")
                            return false
                        }
                        let frame = Array(pending[start..<(start + length)])
                        check.expect(!frame.contains(0x0A), "a frame holds an LF: \(step)")
                        // What follows the frame is its terminator: LF or CR LF.
                        let terminator = Array(pending[(start + length)..<consumed])
                        check.expect(
                            terminator == [0x0A] || terminator == [0x0D, 0x0A],
                            "\(step): the frame is followed by \(terminator), not its LF or CR LF")
                        outputs.append(.frame(frame))
                        offset += consumed
                    case .tooLarge(let consumed):
                        guard consumed > 0, consumed <= pending.count else {
                            check.expect(false, "bad \(step) for \(pending.count) pending bytes, limit \(limit)")
                            return false
                        }
                        outputs.append(.tooLarge)
                        offset += consumed
                    case .needMore(let consumed):
                        guard consumed >= 0, consumed <= pending.count else {
                            check.expect(false, "bad \(step) for \(pending.count) pending bytes, limit \(limit)")
                            return false
                        }
                        offset += consumed
                        buffer.removeFirst(offset)
                        return true
                    }
                }
                buffer.removeFirst(offset)
                return true
            }
            if !ok { return outputs }
        }
        // What is left is one unfinished line that may still fit.
        check.expect(!buffer.contains(0x0A), "an LF was left unread in \(buffer.count) pending bytes")
        check.expect(buffer.count <= limit + 1, "\(buffer.count) pending bytes are kept, limit \(limit)")
        return outputs
    }

    /// Calls `body` with a copy of `bytes` in an allocation of exactly their
    /// size, so that AddressSanitizer sees any read past the end (an Array's
    /// spare capacity would hide it, and `-O` drops the standard library's
    /// bounds checks on unsafe buffers).
    static func withExactCopy<Value>(_ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) -> Value) -> Value {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        defer { copy.deallocate() }
        copy.copyBytes(from: bytes)
        return body(UnsafeRawBufferPointer(copy))
    }

    static func describe(_ outputs: [Output]) -> String {
        let items = outputs.map { output -> String in
            switch output {
            case .frame(let bytes): return "frame(\(bytes.count) bytes)"
            case .tooLarge: return "tooLarge"
            }
        }
        return "[" + items.joined(separator: ", ") + "]"
    }

    // MARK: Frames: JSONParser and EnvelopeParser

    /// One frame (no LF in it) through both parsers.
    static func checkFrame(_ frame: [UInt8], _ check: inout FuzzCheck) {
        checkPlainPaths(frame, &check)
        let value = withExactCopy(frame) { try? JSONParser.parse($0) }
        if let value {
            checkRoundTrip(value, &check)
            checkDepthLimit(frame, value, &check)
        }

        let result = withExactCopy(frame) { EnvelopeParser.parse($0) }
        switch result {
        case .success(let envelope):
            guard case .object(let members)? = value else {
                // The one frame it passes that a strict reading refuses: a
                // response whose result holds a lone surrogate (the broker
                // answers it invalid_result).
                check.expect(
                    envelope.answerHasLoneSurrogate && envelope.kind == .response,
                    "EnvelopeParser accepts a frame that JSONParser does not read as an object")
                return
            }
            check.expect(!envelope.answerHasLoneSurrogate, "a result that JSONParser reads is flagged with a lone surrogate")
            checkEnvelope(envelope, frame, members, &check)
        case .failure(let failure):
            check.expect(failure.error.code == .badRequest, "a bad frame gives \(failure.error.code), not bad_request")
            guard case .object(let members)? = value else { return }
            // JSON that reads as an object is never "malformed".
            let message = failure.error.message
            check.expect(
                !message.hasPrefix("malformed JSON") && !message.hasPrefix("a message must be a JSON object"),
                "EnvelopeParser rejects a JSON object that JSONParser reads: \(message)")
            if let id = failure.id {
                let expected = members["id"].flatMap { MessageID(json: $0) }
                check.expect(id == expected, "the error carries id \(id), the frame has \(String(describing: expected))")
            }
        }
    }

    /// Whether no number is infinite (JSON cannot write one: it is encoded as null).
    static func isFinite(_ value: JSONValue) -> Bool {
        switch value {
        case .double(let number): return number.isFinite
        case .array(let items): return items.allSatisfy(isFinite)
        case .object(let members): return members.values.allSatisfy(isFinite)
        default: return true
        }
    }

    /// parse(encode(v)) == v, encode is a fixed point, and encoding never writes a raw LF.
    static func checkRoundTrip(_ value: JSONValue, _ check: inout FuzzCheck) {
        let encoded = value.encoded
        check.expect(!encoded.contains(0x0A), "encoded JSON holds a raw LF")
        guard let again = try? JSONParser.parse(encoded) else {
            check.expect(false, "encoded JSON does not parse: \(String(decoding: encoded, as: UTF8.self))")
            return
        }
        check.expect(again.encoded == encoded, "encoding is not stable: \(String(decoding: encoded, as: UTF8.self))")
        if isFinite(value) {
            check.expect(again == value, "parse(encode(v)) != v for \(String(decoding: encoded, as: UTF8.self))")
        }
    }

    /// The nesting limit is exact, and the same in both parsers.
    static func checkDepthLimit(_ frame: [UInt8], _ value: JSONValue, _ check: inout FuzzCheck) {
        // The text's nesting, not the value's: a repeated member name keeps
        // only the last value, but the parser still reads (and limits) the
        // earlier ones.
        let nesting = textDepth(frame)
        check.expect((try? JSONParser.parse(frame, maxDepth: nesting)) == value, "rejected at maxDepth \(nesting)")
        if nesting > 0 {
            check.expect((try? JSONParser.parse(frame, maxDepth: nesting - 1)) == nil, "accepted at maxDepth \(nesting - 1)")
        }
        guard case .object = value else { return }
        let envelope = EnvelopeParser.parse(frame)
        check.expect(
            EnvelopeParser.parse(frame, maxDepth: nesting) == envelope,
            "EnvelopeParser differs at maxDepth \(nesting)")
        if nesting > 1, case .failure(let failure) = EnvelopeParser.parse(frame, maxDepth: nesting - 1) {
            check.expect(
                failure.error.message.contains("nesting deeper than"),
                "EnvelopeParser at maxDepth \(nesting - 1): \(failure.error.message)")
        } else if nesting > 1 {
            check.expect(false, "EnvelopeParser accepts nesting \(nesting) at maxDepth \(nesting - 1)")
        }
    }

    /// The deepest nesting of `[` and `{` outside strings in valid JSON text.
    static func textDepth(_ text: [UInt8]) -> Int {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for byte in text {
            if inString {
                if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
                continue
            }
            switch byte {
            case 0x22: inString = true
            case 0x5B, 0x7B:
                depth += 1
                deepest = max(deepest, depth)
            case 0x5D, 0x7D: depth -= 1
            default: break
            }
        }
        return deepest
    }

    /// An accepted envelope says what the frame says, and its ranges are the
    /// exact bytes of the members they stand for.
    static func checkEnvelope(
        _ envelope: Envelope, _ frame: [UInt8], _ members: [String: JSONValue], _ check: inout FuzzCheck
    ) {
        let ranges: [(String, Range<Int>?)] = [
            ("id", envelope.idRange), ("params", envelope.paramsRange), ("caller", envelope.callerRange),
            ("result", envelope.resultRange), ("error", envelope.errorRange), ("data", envelope.dataRange),
        ]
        let kept: Set<String>
        switch envelope.kind {
        case .request: kept = ["id", "params", "caller"]
        case .response: kept = ["id", "result", "error"]
        case .event: kept = ["data"]
        }
        for (name, range) in ranges {
            guard kept.contains(name) else {
                check.expect(range == nil, "a \(envelope.kind) has a \(name) range")
                continue
            }
            check.expect((range != nil) == (members[name] != nil), "\(name): range \(String(describing: range))")
            guard let range else { continue }
            guard range.lowerBound >= 0, range.upperBound <= frame.count, !range.isEmpty else {
                check.expect(false, "\(name) range \(range) is outside the \(frame.count)-byte frame")
                continue
            }
            let whitespace: [UInt8] = [0x20, 0x09, 0x0A, 0x0D]
            check.expect(
                !whitespace.contains(frame[range.lowerBound]) && !whitespace.contains(frame[range.upperBound - 1]),
                "\(name) range \(range) has whitespace at an end")
            let member = try? JSONParser.parse(frame[range])
            check.expect(member != nil && member == members[name], "\(name) range \(range) is not the member's value")
        }

        let id = members["id"].flatMap { MessageID(json: $0) }
        switch envelope.kind {
        case .request:
            check.expect(members["target"] != nil || members["action"] != nil, "a request without target or action")
            check.expect(envelope.target == members["target"]?.stringValue, "target \(envelope.target)")
            check.expect(envelope.action == members["action"]?.stringValue, "action \(envelope.action)")
            check.expect(NameRules.isValidTarget(envelope.target), "invalid target accepted: \(envelope.target)")
            check.expect(NameRules.isValidAction(envelope.action), "invalid action accepted: \(envelope.action)")
            check.expect(envelope.id == id && (members["id"] == nil || id != nil), "request id \(String(describing: envelope.id))")
            if let params = members["params"] {
                check.expect(params.objectValue != nil, "params that are not an object accepted")
            }
            let timeout = members["timeout_ms"]?.intValue
            check.expect(envelope.timeoutMs == timeout && (timeout ?? 1) > 0, "timeout_ms \(String(describing: envelope.timeoutMs))")
            check.expect(envelope.more == (members["more"]?.boolValue ?? false), "more \(envelope.more)")
        case .event:
            check.expect(members["target"] == nil && members["action"] == nil, "an event with target or action")
            check.expect(envelope.event == members["event"]?.stringValue, "event \(envelope.event)")
            check.expect(NameRules.isValidEvent(envelope.event), "invalid event name accepted: \(envelope.event)")
        case .response:
            check.expect(
                members["target"] == nil && members["action"] == nil && members["event"] == nil,
                "a response with target, action or event")
            check.expect(members["id"] != nil, "a response without id")
            check.expect(envelope.id == id, "response id \(String(describing: envelope.id))")
            check.expect((members["result"] == nil) != (members["error"] == nil), "a response needs exactly one of result, error")
            if let error = members["error"] {
                check.expect(
                    MediatorError(json: error) != nil && error["message"]?.stringValue != nil, "a malformed error accepted")
            }
            check.expect(envelope.continues == (members["continues"]?.boolValue ?? false), "continues \(envelope.continues)")
        }
    }

    // MARK: URLs

    static func checkURL(_ input: [UInt8], _ check: inout FuzzCheck) {
        let text = String(decoding: input, as: UTF8.self)
        let url: MediatorURL
        do {
            url = try MediatorURL(parsing: text)
        } catch {
            check.expect(error.code == .badRequest, "a bad URL gives \(error.code), not bad_request")
            return
        }
        let bytes = Array(text.utf8)
        check.expect(!bytes.contains { $0 <= 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "#") }, "space, control or # accepted")
        let scheme = Array(url.scheme.utf8)
        check.expect(
            scheme.first.map(isLowerLetter) == true
                && scheme.allSatisfy { isLowerLetter($0) || isDigit($0) || "+.-".utf8.contains($0) },
            "scheme \(url.scheme)")
        check.expect(NameRules.isValidTarget(url.target), "invalid target accepted: \(url.target)")
        check.expect(NameRules.isValidAction(url.action), "invalid action accepted: \(url.action)")
        check.expect(!url.params.keys.contains(""), "an empty query key accepted")
        check.expect(url.paramsJSON == .object(url.params.mapValues { .string($0) }), "paramsJSON")

        // Written back with every byte but the unreserved ones escaped, the
        // URL reads the same; with an upper-case scheme or a trailing slash too.
        let query = url.params.sorted { $0.key < $1.key }.map { percentEncoded($0.key) + "=" + percentEncoded($0.value) }
        let path = "//" + url.target + "/" + url.action
        let written = [
            url.scheme + ":" + path + "?" + query.joined(separator: "&"),
            url.scheme.uppercased() + ":" + path + "/?&" + query.joined(separator: "&&"),
        ]
        for text in written {
            do {
                let again = try MediatorURL(parsing: text)
                check.expect(again == url, "\(text) reads as \(again), not \(url)")
            } catch {
                check.expect(false, "\(text) is refused: \(error.message)")
            }
        }
    }

    static func isLowerLetter(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }
    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            let lower = byte | 0x20
            if (lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z")) || isDigit(byte) || "-._~".utf8.contains(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: Schemas

    /// `value` with each integer that a Double holds exactly as a Double, and
    /// each integral Double that an Int64 holds as an Int64.
    static func otherNumbers(_ value: JSONValue) -> JSONValue {
        switch value {
        case .int(let number):
            guard let double = Double(exactly: number) else { return value }
            return .double(double)
        case .double(let number):
            guard let integer = Int64(exactly: number) else { return value }
            return .int(integer)
        case .array(let items): return .array(items.map(otherNumbers))
        case .object(let members): return .object(members.mapValues(otherNumbers))
        default: return value
        }
    }

    static func checkSchema(_ input: [UInt8], _ check: inout FuzzCheck) {
        let split = input.firstIndex(of: 0)
        let schemaBytes = split.map { input[..<$0] } ?? input[...]
        let valueBytes = split.map { input[($0 + 1)...] } ?? input[...]
        let schemaJSON = try? JSONParser.parse(schemaBytes)
        let value = try? JSONParser.parse(valueBytes)

        // Schemas built from a value accept it.
        for example in [schemaJSON, value].compactMap({ $0 }) {
            var made: [(String, JSONValue)] = [
                ("{}", [:]),
                ("enum", ["enum": [example]]),
                // `enum` compares numbers by value: 1 matches 1.0.
                ("enum, numbers written the other way", ["enum": [otherNumbers(example)]]),
                ("type", ["type": .string(example.typeName)]),
            ]
            if let members = example.objectValue {
                made.append(("required", ["required": .array(members.keys.sorted().map { .string($0) })]))
            }
            if let items = example.arrayValue, !items.isEmpty {
                var types: [JSONValue] = []
                for item in items where !types.contains(.string(item.typeName)) { types.append(.string(item.typeName)) }
                made.append(("items", ["type": "array", "items": ["type": .array(types), "enum": .array(items)]]))
            }
            for (label, json) in made {
                do {
                    let schema = try Schema(json: json)
                    let verdict = schema.validate(example)
                    check.expect(verdict == nil, "\(label) schema \(json) rejects \(example): \(verdict?.message ?? "")")
                } catch {
                    check.expect(false, "\(label) schema \(json) refused: \(error.message)")
                }
            }
        }

        guard let schemaJSON else { return }
        let schema: Schema
        do {
            schema = try Schema(json: schemaJSON)
        } catch {
            check.expect(error.code == .badRequest, "a bad schema gives \(error.code), not bad_request")
            return
        }
        // Read back from its own encoding, a schema is the same.
        if isFinite(schemaJSON), let again = try? JSONParser.parse(schemaJSON.encoded) {
            check.expect((try? Schema(json: again)) == schema, "the schema read from its encoding differs")
        }
        guard let value else { return }
        let verdict = schema.validate(value)
        check.expect(verdict == nil || verdict?.code == .invalidParams, "validation gives \(String(describing: verdict?.code))")
        check.expect(schema.validate(value) == verdict, "validation is not deterministic")
        if isFinite(value), let again = try? JSONParser.parse(value.encoded) {
            check.expect(
                schema.validate(again) == verdict, "the value read from its encoding validates differently")
        }
    }
}
