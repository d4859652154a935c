/// The two frames a library reads for nearly every call, read without the
/// general parser's member loop and classification: mediatord writes them
/// with fixed members in a fixed order (FrameWriter's `forwardedResponse`
/// and `forwardedRequest`). Anything else (other members, another order,
/// whitespace, escapes in a name, a string id) returns false, and the
/// caller then runs the general parser, which reads it or refuses it: these
/// paths accept nothing that one would not, and fill the envelope as it would.
extension EnvelopeParser {
    /// A caller's answer of exactly `{"id":N,"result":VALUE}`, N a plain
    /// non-negative integer. VALUE is decoded as the general parser
    /// decodes a result (the same reader, depth and strictness).
    ///
    /// - Parameter envelope: one just made by `Envelope(kind: .request)`,
    ///   filled only when this returns true.
    package static func parsePlainResult(
        _ frame: UnsafeRawBufferPointer, intoFresh envelope: inout Envelope, result: inout JSONValue?,
        maxDepth: Int = JSONParser.defaultMaxDepth
    ) -> Bool {
        guard let idStart = matched("{\"id\":", in: frame, at: 0), let (id, idEnd) = plainInteger(frame, at: idStart),
            let valueStart = matched(",\"result\":", in: frame, at: idEnd)
        else { return false }
        var parser = JSONParser(frame, maxDepth: maxDepth)
        parser.position = valueStart
        guard let value = try? parser.parseValue(depth: 1), isClosedAtEnd(parser) else { return false }
        envelope.kind = .response
        envelope.id = .int(id)
        envelope.idRange = idStart..<idEnd
        envelope.resultRange = valueStart..<parser.position
        result = value
        return true
    }

    /// A component's request of exactly
    /// `{"id":N,"target":"T","action":"A","params":{…},"timeout_ms":N,"caller":VALUE}`,
    /// with `"more":true` before `caller` or not, and `traceparent` (and
    /// `tracestate`) after it or not. T and A are checked as
    /// names (``NameRules``), the params decoded as the general parser
    /// decodes them, `caller` checked as JSON and kept as a range.
    ///
    /// - Parameter envelope: one just made by `Envelope(kind: .request)`,
    ///   filled only when this returns true.
    /// - Parameter names: the names of the last request read this way,
    ///   taken instead of new strings (made and checked again, ~500
    ///   instructions each) when this one has the same; updated.
    package static func parsePlainRequest(
        _ frame: UnsafeRawBufferPointer, intoFresh envelope: inout Envelope, params: inout JSONValue?,
        names: inout RequestNames, maxDepth: Int = JSONParser.defaultMaxDepth
    ) -> Bool {
        guard let idStart = matched("{\"id\":", in: frame, at: 0), let (id, idEnd) = plainInteger(frame, at: idStart),
            let targetStart = matched(",\"target\":\"", in: frame, at: idEnd),
            let targetEnd = plainNameEnd(frame, from: targetStart),
            let actionStart = matched("\",\"action\":\"", in: frame, at: targetEnd),
            let actionEnd = plainNameEnd(frame, from: actionStart),
            let paramsStart = matched("\",\"params\":", in: frame, at: actionEnd),
            paramsStart < frame.count, frame[paramsStart] == UInt8(ascii: "{")
        else { return false }
        var parser = JSONParser(frame, maxDepth: maxDepth)
        parser.position = paramsStart
        guard let value = try? parser.parseValue(depth: 1) else { return false }
        let paramsEnd = parser.position
        guard let timeoutStart = matched(",\"timeout_ms\":", in: frame, at: paramsEnd),
            let (timeout, timeoutEnd) = plainInteger(frame, at: timeoutStart), timeout > 0
        else { return false }
        let more = matched(",\"more\":true", in: frame, at: timeoutEnd)
        guard let callerStart = matched(",\"caller\":", in: frame, at: more ?? timeoutEnd) else { return false }
        parser.position = callerStart
        guard (try? parser.skipValue(depth: 1)) != nil else { return false }
        let callerEnd = parser.position
        // A traced call's members, after `caller`: strings, kept as ranges.
        var traceparent: Range<Int>?
        var tracestate: Range<Int>?
        if let start = matched(",\"traceparent\":", in: frame, at: callerEnd) {
            guard let end = stringEnd(&parser, at: start) else { return false }
            traceparent = start..<end
            if let start = matched(",\"tracestate\":", in: frame, at: end) {
                guard let end = stringEnd(&parser, at: start) else { return false }
                tracestate = start..<end
            }
        }
        guard isClosedAtEnd(parser) else { return false }
        // An invalid name is refused by the general parser, with its message.
        guard let target = name(frame, targetStart..<targetEnd, last: names.target, isValid: NameRules.isValidTarget),
            let action = name(frame, actionStart..<actionEnd, last: names.action, isValid: NameRules.isValidAction)
        else { return false }
        names = RequestNames(target: target, action: action)
        envelope.id = .int(id)
        envelope.idRange = idStart..<idEnd
        envelope.target = target
        envelope.action = action
        envelope.paramsRange = paramsStart..<paramsEnd
        envelope.timeoutMs = timeout
        envelope.more = more != nil
        envelope.callerRange = callerStart..<callerEnd
        if let traceparent { traceContext(frame, traceparent: traceparent, tracestate: tracestate, into: &envelope) }
        params = value
        return true
    }

    /// A component's last target and action (see ``parsePlainRequest(_:intoFresh:params:names:maxDepth:)``).
    package struct RequestNames: Sendable {
        var target = ""
        var action = ""
        package init() {}
        init(target: String, action: String) {
            self.target = target
            self.action = action
        }
    }

    /// The name in `range` (plain ASCII): `last` when it has the same
    /// bytes (checked when it was made), else a new string if `isValid`.
    private static func name(
        _ frame: UnsafeRawBufferPointer, _ range: Range<Int>, last: String, isValid: (String) -> Bool
    ) -> String? {
        let bytes = UnsafeRawBufferPointer(rebasing: frame[range])
        var last = last  // withUTF8 is mutating; a copy of a small or native string costs nothing
        // A plain loop: `elementsEqual` took ~250 instructions a name.
        let same = last.utf8.count == bytes.count && last.withUTF8 { utf8 in
            for index in 0..<bytes.count where utf8[index] != bytes[index] { return false }
            return true
        }
        if same, !last.isEmpty { return last }
        let name = String(decoding: bytes, as: UTF8.self)
        return isValid(name) ? name : nil
    }

    /// Checks the string at `start` as the general parser does and moves
    /// past it; where it ends, nil when it is not a well-formed string.
    private static func stringEnd(_ parser: inout JSONParser, at start: Int) -> Int? {
        guard start < parser.bytes.count, parser.bytes[start] == UInt8(ascii: "\"") else { return nil }
        parser.position = start
        guard (try? parser.skipString()) != nil else { return nil }
        return parser.position
    }

    /// Whether the parser stopped at the frame's last byte and it is the
    /// closing `}`, with no lone surrogate let through on the way.
    private static func isClosedAtEnd(_ parser: JSONParser) -> Bool {
        parser.loneSurrogate == nil && parser.position == parser.bytes.count - 1
            && parser.bytes[parser.position] == UInt8(ascii: "}")
    }

    /// Where `literal` ends when the frame holds it at `start`; nil
    /// otherwise. Compared a word at a time (the last word overlapping the
    /// one before): byte by byte, the two literals of a response cost
    /// some 240 instructions.
    @inline(__always)
    private static func matched(_ literal: StaticString, in frame: UnsafeRawBufferPointer, at start: Int) -> Int? {
        let count = literal.utf8CodeUnitCount
        guard start + count <= frame.count else { return nil }
        let bytes = UnsafeRawBufferPointer(start: literal.utf8Start, count: count)
        guard count >= WordScan.width else {
            for index in 0..<count where frame[start + index] != bytes[index] { return nil }
            return start + count
        }
        var offset = 0
        while true {
            guard WordScan.word(frame, at: start + offset) == WordScan.word(bytes, at: offset) else { return nil }
            if offset == count - WordScan.width { return start + count }
            offset = min(offset + WordScan.width, count - WordScan.width)
        }
    }

    /// A non-negative integer of 1 to 18 digits as JSON writes it (no
    /// leading zero but "0" itself; 18 digits cannot overflow) and where
    /// it ends; nil for anything else. A 19th digit, a fraction or an
    /// exponent after it fails the literal the callers match next.
    private static func plainInteger(_ frame: UnsafeRawBufferPointer, at start: Int) -> (Int64, end: Int)? {
        var position = start
        var value: Int64 = 0
        while position < frame.count, position - start < 18, frame[position] >= 0x30, frame[position] <= 0x39 {
            value = value * 10 + Int64(frame[position] - 0x30)
            position += 1
        }
        let digits = position - start
        guard digits > 0, digits == 1 || frame[start] != 0x30 else { return nil }
        return (value, position)
    }

    /// Where a string's contents that start at `start` end (at its closing
    /// quote) when they are printable ASCII without escapes; nil otherwise.
    private static func plainNameEnd(_ frame: UnsafeRawBufferPointer, from start: Int) -> Int? {
        // Plain bytes a word at a time; the byte that stops it is looked at below.
        var position = WordScan.skipPlainString(frame, from: start)
        while position < frame.count {
            let byte = frame[position]
            if byte == UInt8(ascii: "\"") { return position }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
            position += 1
        }
        return nil
    }
}
