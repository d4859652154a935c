/// Classifies one frame as a request, response or event (contract section 2)
/// and checks the types of its members.
///
/// It runs twice for every routed call (the request and the response), so it
/// reads the frame once and builds almost nothing: member names are matched
/// as bytes, the members it knows are kept as byte ranges (the last of a
/// repeated name wins), and only the small ones the broker needs as values
/// (id, target, action, timeout_ms, more, continues, event, fds) are read, from
/// their bytes when they are plain, through ``JSONParser`` otherwise.
public enum EnvelopeParser {
    /// Reads one frame (without its LF) as a message and checks its
    /// top-level members (contract section 2); `params`, `result`, `error`
    /// and `data` are only checked to be JSON, and kept as byte ranges.
    ///
    /// - Returns: the envelope, or the `bad_request` to answer (with the
    ///   frame's id when it could be read).
    public static func parse(_ frame: UnsafeRawBufferPointer, maxDepth: Int = JSONParser.defaultMaxDepth) -> Result<Envelope, EnvelopeError> {
        var envelope = Envelope(kind: .request)
        var unused = Payloads()
        if let failure = parse(frame, into: &envelope, payloads: &unused, decoding: false, fresh: true, maxDepth: maxDepth) {
            return .failure(failure)
        }
        return .success(envelope)
    }

    /// The members a library hands to its user as values, decoded in the
    /// pass that checks the frame rather than checked there and parsed
    /// again afterwards (the last of a repeated name, as for the ranges).
    public struct Payloads: Sendable {
        /// A request's `params`; nil when absent.
        public var params: JSONValue?
        /// A response's `result`; nil for an error or another kind.
        public var result: JSONValue?
        /// An event's `data`; nil when absent.
        public var data: JSONValue?
        /// None decoded yet.
        public init() {}
    }

    /// ``parse(_:maxDepth:)-(UnsafeRawBufferPointer,_)`` that also decodes `params`, `result` and
    /// `data` into `payloads`: a client's and a component's path, which
    /// need those as values (the broker forwards their bytes instead).
    public static func parse(
        _ frame: UnsafeRawBufferPointer, decoding payloads: inout Payloads, maxDepth: Int = JSONParser.defaultMaxDepth
    ) -> Result<Envelope, EnvelopeError> {
        var envelope = Envelope(kind: .request)
        if let failure = parse(frame, into: &envelope, payloads: &payloads, decoding: true, fresh: true, maxDepth: maxDepth) {
            return .failure(failure)
        }
        return .success(envelope)
    }

    /// ``parse(_:decoding:maxDepth:)`` writing the envelope in place and
    /// returning only a failure, as ``parse(_:into:maxDepth:)`` does.
    public static func parse(
        _ frame: UnsafeRawBufferPointer, into envelope: inout Envelope, decoding payloads: inout Payloads,
        maxDepth: Int = JSONParser.defaultMaxDepth
    ) -> EnvelopeError? {
        parse(frame, into: &envelope, payloads: &payloads, decoding: true, fresh: false, maxDepth: maxDepth)
    }

    /// ``parse(_:into:decoding:maxDepth:)`` into an envelope just made by
    /// `Envelope(kind: .request)` and not changed since, which the parser
    /// then fills without making it anew (see ``parse(_:intoFresh:maxDepth:)``).
    package static func parse(
        _ frame: UnsafeRawBufferPointer, intoFresh envelope: inout Envelope, decoding payloads: inout Payloads,
        maxDepth: Int = JSONParser.defaultMaxDepth
    ) -> EnvelopeError? {
        parse(frame, into: &envelope, payloads: &payloads, decoding: true, fresh: true, maxDepth: maxDepth)
    }

    /// ``parse(_:maxDepth:)-(UnsafeRawBufferPointer,_)`` writing the envelope into `envelope` (every
    /// member of it, so any envelope will do), and returning only a failure:
    /// the broker's path, where an envelope (some 200 bytes) handed back in
    /// a `Result` was copied at each level.
    public static func parse(
        _ frame: UnsafeRawBufferPointer, into envelope: inout Envelope, maxDepth: Int = JSONParser.defaultMaxDepth
    ) -> EnvelopeError? {
        var unused = Payloads()
        return parse(frame, into: &envelope, payloads: &unused, decoding: false, fresh: false, maxDepth: maxDepth)
    }

    /// ``parse(_:into:maxDepth:)`` into an envelope just made by
    /// `Envelope(kind: .request)` and not changed since: the parser fills
    /// it in place instead of assigning a new one of the kind it finds,
    /// which built one in a temporary, copied it and destroyed the old one
    /// (some 200 instructions per routed call, two frames).
    package static func parse(
        _ frame: UnsafeRawBufferPointer, intoFresh envelope: inout Envelope, maxDepth: Int = JSONParser.defaultMaxDepth
    ) -> EnvelopeError? {
        var unused = Payloads()
        return parse(frame, into: &envelope, payloads: &unused, decoding: false, fresh: true, maxDepth: maxDepth)
    }

    private static func parse(
        _ frame: UnsafeRawBufferPointer, into envelope: inout Envelope, payloads: inout Payloads, decoding: Bool,
        fresh: Bool, maxDepth: Int
    ) -> EnvelopeError? {
        var ranges = Ranges()
        var parser = JSONParser(frame, maxDepth: maxDepth)
        // The id read so far, for a frame broken further on: read from its
        // range only then (a well-formed frame has it read once, by classify).
        var recoveredID: MessageID? { ranges.id.flatMap { messageID(frame, $0) } }
        var idAtLoneSurrogate: MessageID?
        // Where a strict reading would have stopped, as it would say it: a
        // frame refused for a lone surrogate is refused as a client refuses it.
        func strictFailure(_ loneSurrogate: Int) -> EnvelopeError {
            malformed(parser.loneSurrogateError(at: loneSurrogate), id: idAtLoneSurrogate)
        }
        do {
            parser.skipWhitespace()
            guard !parser.atEnd, parser.current == UInt8(ascii: "{") else {
                return EnvelopeError(MediatorError(.badRequest, "a message must be a JSON object"), id: nil)
            }
            parser.position += 1
            parser.skipWhitespace()
            if !parser.atEnd, parser.current == UInt8(ascii: "}") {
                parser.position += 1
            } else {
                while true {
                    parser.skipWhitespace()
                    guard !parser.atEnd, parser.current == UInt8(ascii: "\"") else { throw parser.error("expected a member name") }
                    let member = try memberName(&parser)
                    parser.skipWhitespace()
                    try parser.expect(UInt8(ascii: ":"), "':'")
                    parser.skipWhitespace()
                    let start = parser.position
                    switch member {
                    case .params? where decoding: payloads.params = try parser.parseValue(depth: 1)
                    case .result? where decoding: payloads.result = try parser.parseValue(depth: 1)
                    case .data? where decoding: payloads.data = try parser.parseValue(depth: 1)
                    case .result? where !decoding, .error? where !decoding:
                        // A lone surrogate in a result or an error is told
                        // apart: the broker answers the caller instead of
                        // dropping the response as malformed (issue 23).
                        let before = parser.loneSurrogate
                        parser.allowsLoneSurrogates = true
                        try parser.skipValue(depth: 1)
                        parser.allowsLoneSurrogates = false
                        if before == nil, parser.loneSurrogate != nil { idAtLoneSurrogate = recoveredID }
                    default: try parser.skipValue(depth: 1)
                    }
                    if let member { ranges[member] = start..<parser.position }
                    parser.skipWhitespace()
                    guard !parser.atEnd else { throw parser.error("unexpected end of input in an object") }
                    if parser.current == UInt8(ascii: ",") { parser.position += 1; continue }
                    if parser.current == UInt8(ascii: "}") { parser.position += 1; break }
                    throw parser.error("expected ',' or '}'")
                }
            }
            parser.skipWhitespace()
            guard parser.atEnd else { throw parser.error("unexpected data after the message") }
        } catch {
            if let loneSurrogate = parser.loneSurrogate { return strictFailure(loneSurrogate) }
            return malformed(error, id: recoveredID)
        }
        // In place: `ranges` (some 380 bytes) is captured by `recoveredID`,
        // so passing it by value copied it.
        let failure = classify(frame, &ranges, into: &envelope, fresh: fresh, loneSurrogate: parser.loneSurrogate)
        guard let loneSurrogate = parser.loneSurrogate else { return failure }
        // Only in the result or error of a response that is otherwise well formed.
        if failure == nil, envelope.kind == .response,
            (envelope.resultRange ?? envelope.errorRange)?.contains(loneSurrogate) == true
        {
            envelope.answerHasLoneSurrogate = true
            return nil
        }
        return strictFailure(loneSurrogate)
    }

    private static func malformed(_ error: any Error, id: MessageID?) -> EnvelopeError {
        EnvelopeError(MediatorError(.badRequest, "malformed JSON: \(error)"), id: id)
    }

    /// ``parse(_:maxDepth:)-(UnsafeRawBufferPointer,_)`` of a frame held in an array.
    public static func parse(_ frame: [UInt8], maxDepth: Int = JSONParser.defaultMaxDepth) -> Result<Envelope, EnvelopeError> {
        frame.withUnsafeBytes { parse($0, maxDepth: maxDepth) }
    }

    /// Reads a member name (checked as ``JSONParser/parseString()`` checks
    /// strings) and says which known member it is, nil for any other.
    static func memberName(_ parser: inout JSONParser) throws(JSONParseError) -> Member? {
        let start = parser.position
        // The common case, a name of at most 16 bytes of plain ASCII without
        // escapes (every name the contract has) with 16 bytes of the frame
        // to read from: found a word at a time and matched as two words.
        // Anything else takes the general path below.
        let bytes = parser.bytes
        let nameStart = start + 1
        if nameStart + 16 <= bytes.count {
            let stop = WordScan.skipPlainString(bytes, from: nameStart)
            if stop < bytes.count, stop - nameStart <= 16, bytes[stop] == UInt8(ascii: "\"") {
                parser.position = stop + 1
                return Member(packedName: bytes, at: nameStart, count: stop - nameStart)
            }
        }
        try parser.skipString()
        let name = UnsafeRawBufferPointer(rebasing: parser.bytes[(start + 1)..<(parser.position - 1)])
        guard name.contains(UInt8(ascii: "\\")) else { return Member(plainName: name) }
        var escaped = JSONParser(UnsafeRawBufferPointer(rebasing: parser.bytes[start..<parser.position]))
        return Member(decodedName: try escaped.parseString())
    }

    static func decode(_ frame: UnsafeRawBufferPointer, _ range: Range<Int>) -> JSONValue? {
        try? JSONParser.parse(UnsafeRawBufferPointer(rebasing: frame[range]))
    }

    /// A string value's text; nil when the value is not a string. A string
    /// without escapes is its bytes (already checked as UTF-8).
    static func string(_ frame: UnsafeRawBufferPointer, _ range: Range<Int>) -> String? {
        guard frame[range.lowerBound] == UInt8(ascii: "\"") else { return nil }
        let inner = UnsafeRawBufferPointer(rebasing: frame[(range.lowerBound + 1)..<(range.upperBound - 1)])
        if !inner.contains(UInt8(ascii: "\\")) { return String(decoding: inner, as: UTF8.self) }
        return decode(frame, range)?.stringValue
    }

    /// An integer value; nil when the value is not a number with an integral value.
    static func integer(_ frame: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int64? {
        // Plain digits of at most 18 (the value already passed the number syntax): no overflow possible.
        let negative = frame[range.lowerBound] == UInt8(ascii: "-")
        let digits = (negative ? range.lowerBound + 1 : range.lowerBound)..<range.upperBound
        if digits.count <= 18, !digits.isEmpty, digits.allSatisfy({ frame[$0] >= 0x30 && frame[$0] <= 0x39 }) {
            var value: Int64 = 0
            for index in digits { value = value * 10 + Int64(frame[index] - 0x30) }
            return negative ? -value : value
        }
        return decode(frame, range)?.intValue
    }

    /// A boolean value (the value already passed the literal syntax); nil for any other type.
    static func bool(_ frame: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool? {
        switch frame[range.lowerBound] {
        case UInt8(ascii: "t"): return true
        case UInt8(ascii: "f"): return false
        default: return nil
        }
    }

    /// The id a value stands for; nil when it is not a valid id (or is null).
    static func messageID(_ frame: UnsafeRawBufferPointer, _ range: Range<Int>) -> MessageID? {
        switch frame[range.lowerBound] {
        case UInt8(ascii: "\""):
            guard let text = string(frame, range), text.utf8.count <= MessageID.maxStringBytes else { return nil }
            return .string(text)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return integer(frame, range).map { .int($0) }
        default:
            return nil
        }
    }

    /// Reads `fds` into `envelope`; the failure's message when it is not
    /// an integer from 1 to ``ProtocolConstants/maxFdsPerMessageLimit``.
    /// The receiver's own `max_fds`, and whether the count matches the
    /// descriptors that arrived, are the receiver's to check.
    static func descriptorCount(_ frame: UnsafeRawBufferPointer, _ range: Range<Int>, into envelope: inout Envelope) -> String? {
        guard let count = integer(frame, range), count > 0 else {
            return "\"fds\" must be a positive integer, the number of descriptors sent with the message"
        }
        guard count <= ProtocolConstants.maxFdsPerMessageLimit else {
            return "\"fds\" must be at most \(ProtocolConstants.maxFdsPerMessageLimit), the most descriptors one message can carry"
        }
        envelope.fds = Int(count)
        return nil
    }

    /// Keeps the trace members' ranges when `traceparent` is well formed, and
    /// `tracestate` only with it (W3C: no `tracestate` without a parent).
    /// `traceparent` is checked on its bytes, `tracestate` after unescaping
    /// when it has escapes (``TraceContext``).
    static func traceContext(
        _ frame: UnsafeRawBufferPointer, traceparent: Range<Int>, tracestate: Range<Int>?, into envelope: inout Envelope
    ) {
        func contents(_ range: Range<Int>) -> UnsafeRawBufferPointer? {
            guard frame[range.lowerBound] == UInt8(ascii: "\""), range.count >= 2 else { return nil }
            return UnsafeRawBufferPointer(rebasing: frame[(range.lowerBound + 1)..<(range.upperBound - 1)])
        }
        // Offsets past 4 GiB (a frame limit set that high) do not fit the envelope's bounds: dropped.
        guard let parent = contents(traceparent), TraceContext.isValidTraceparent(parent),
            traceparent.upperBound <= UInt32.max
        else { return }
        var bounds = Envelope.TraceBounds(
            parentStart: UInt32(traceparent.lowerBound), parentEnd: UInt32(traceparent.upperBound), stateStart: 0, stateEnd: 0)
        if let tracestate, let state = contents(tracestate), TraceContext.isValidTracestate(state),
            tracestate.upperBound <= UInt32.max
        {
            bounds.stateStart = UInt32(tracestate.lowerBound)
            bounds.stateEnd = UInt32(tracestate.upperBound)
        }
        envelope.traceBounds = bounds
    }

    /// `loneSurrogate`: where the first lone surrogate escape the reading
    /// let pass stands; an error object holding it cannot be decoded, and
    /// is taken as it is (the broker refuses it: ``Envelope/answerHasLoneSurrogate``).
    static func classify(
        _ frame: UnsafeRawBufferPointer, _ ranges: inout Ranges, into envelope: inout Envelope, fresh: Bool = false,
        loneSurrogate: Int? = nil
    ) -> EnvelopeError? {
        // A fresh envelope (`Envelope(kind: .request)`, untouched) only needs its kind.
        func start(_ kind: Envelope.Kind) {
            if fresh { envelope.kind = kind } else { envelope = Envelope(kind: kind) }
        }
        // The id first, so that every later error can carry it.
        var id: MessageID?
        var idIsValid = true
        if let range = ranges.id, frame[range.lowerBound] != UInt8(ascii: "n") {
            id = messageID(frame, range)
            idIsValid = id != nil
        }
        func fail(_ message: String, keepID: Bool = true) -> EnvelopeError? {
            EnvelopeError(MediatorError(.badRequest, message), id: keepID ? id : nil)
        }

        if ranges.target != nil || ranges.action != nil {
            guard idIsValid else { return fail("\"id\" must be an integer or a string of at most \(MessageID.maxStringBytes) bytes") }
            start(.request)
            if ranges.id != nil, id == nil { return fail("\"id\" must not be null; omit it for a oneway request") }
            envelope.id = id
            envelope.idRange = ranges.id
            guard let target = ranges.target.flatMap({ string(frame, $0) }) else { return fail("\"target\" must be a string") }
            guard NameRules.isValidTarget(target) else { return fail("invalid target name \(JSONValue.string(target))") }
            guard let action = ranges.action.flatMap({ string(frame, $0) }) else { return fail("\"action\" must be a string") }
            guard NameRules.isValidAction(action) else { return fail("invalid action name \(JSONValue.string(action))") }
            envelope.target = target
            envelope.action = action
            if let range = ranges.params {
                guard frame[range.lowerBound] == UInt8(ascii: "{") else { return fail("\"params\" must be an object") }
                envelope.paramsRange = range
            }
            if let range = ranges.timeoutMs {
                guard let milliseconds = integer(frame, range), milliseconds > 0 else {
                    return fail("\"timeout_ms\" must be a positive integer")
                }
                envelope.timeoutMs = milliseconds
            }
            if let range = ranges.more {
                guard let flag = bool(frame, range) else { return fail("\"more\" must be a boolean") }
                envelope.more = flag
            }
            if let range = ranges.fds, let message = descriptorCount(frame, range, into: &envelope) { return fail(message) }
            envelope.callerRange = ranges.caller
            envelope.remoteCallerRange = ranges.remoteCaller
            // Trace context is optional and never fails a request: a malformed one is dropped.
            if let range = ranges.traceparent { traceContext(frame, traceparent: range, tracestate: ranges.tracestate, into: &envelope) }
            return nil
        }

        if let range = ranges.event {
            start(.event)
            guard let name = string(frame, range), NameRules.isValidEvent(name) else {
                return fail("\"event\" must be a valid event name")
            }
            envelope.event = name
            guard ranges.fds == nil else { return fail("an event carries no descriptors: \"fds\" is not allowed in one") }
            envelope.dataRange = ranges.data
            return nil
        }

        if ranges.id != nil, ranges.result != nil || ranges.error != nil {
            guard idIsValid else { return fail("\"id\" must be an integer or a string") }
            guard (ranges.result == nil) != (ranges.error == nil) else {
                return fail("a response has exactly one of \"result\" and \"error\"")
            }
            start(.response)
            envelope.id = id
            envelope.idRange = ranges.id
            envelope.resultRange = ranges.result
            if let range = ranges.error, loneSurrogate.map(range.contains) == true {
                envelope.errorRange = range
            } else if let range = ranges.error {
                guard let error = decode(frame, range), MediatorError(json: error) != nil, error["message"]?.stringValue != nil else {
                    return fail("\"error\" must be an object with string \"code\" and \"message\"")
                }
                envelope.errorRange = range
            }
            if let range = ranges.continues {
                guard let flag = bool(frame, range) else { return fail("\"continues\" must be a boolean") }
                envelope.continues = flag
            }
            if let range = ranges.fds, let message = descriptorCount(frame, range, into: &envelope) { return fail(message) }
            return nil
        }

        return fail("not a request, response or event: a request has \"target\" and \"action\", a response \"id\" and \"result\" or \"error\", an event \"event\"")
    }
}
