/// Classifies one frame as a request, response or event (contract section 2)
/// and checks the types of its members.
public enum EnvelopeParser {
    public static func parse(_ frame: UnsafeRawBufferPointer, maxDepth: Int = JSONParser.defaultMaxDepth) -> Result<Envelope, EnvelopeError> {
        var members: [(key: String, range: Range<Int>)] = []
        var parser = JSONParser(frame, maxDepth: maxDepth)
        var recoveredID: MessageID?
        do {
            parser.skipWhitespace()
            guard !parser.atEnd, parser.current == UInt8(ascii: "{") else {
                return .failure(EnvelopeError(MediatorError(.badRequest, "a message must be a JSON object"), id: nil))
            }
            parser.position += 1
            parser.skipWhitespace()
            if !parser.atEnd, parser.current == UInt8(ascii: "}") {
                parser.position += 1
            } else {
                while true {
                    parser.skipWhitespace()
                    guard !parser.atEnd, parser.current == UInt8(ascii: "\"") else { throw parser.error("expected a member name") }
                    let key = try parser.parseString()
                    parser.skipWhitespace()
                    try parser.expect(UInt8(ascii: ":"), "':'")
                    parser.skipWhitespace()
                    let start = parser.position
                    try parser.skipValue(depth: 1)
                    let range = start..<parser.position
                    members.append((key, range))
                    if key == "id" {
                        recoveredID = MessageID(json: (try? decode(frame, range)) ?? .null)
                    }
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
            return .failure(EnvelopeError(MediatorError(.badRequest, "malformed JSON: \(error)"), id: recoveredID))
        }
        return classify(frame, members)
    }

    public static func parse(_ frame: [UInt8], maxDepth: Int = JSONParser.defaultMaxDepth) -> Result<Envelope, EnvelopeError> {
        frame.withUnsafeBytes { parse($0, maxDepth: maxDepth) }
    }

    static func decode(_ frame: UnsafeRawBufferPointer, _ range: Range<Int>) throws(JSONParseError) -> JSONValue {
        try JSONParser.parse(UnsafeRawBufferPointer(rebasing: frame[range]))
    }

    static func classify(_ frame: UnsafeRawBufferPointer, _ members: [(key: String, range: Range<Int>)]) -> Result<Envelope, EnvelopeError> {
        var ranges: [String: Range<Int>] = [:]
        for member in members { ranges[member.key] = member.range }  // the last of repeated names wins

        func value(_ key: String) -> JSONValue? {
            guard let range = ranges[key] else { return nil }
            return try? decode(frame, range)
        }
        func isNull(_ key: String) -> Bool { value(key) == .null }

        // The id first, so that every later error can carry it.
        var id: MessageID?
        var idIsValid = true
        if let raw = value("id"), raw != .null {
            id = MessageID(json: raw)
            idIsValid = id != nil
        }
        func fail(_ message: String, keepID: Bool = true) -> Result<Envelope, EnvelopeError> {
            .failure(EnvelopeError(MediatorError(.badRequest, message), id: keepID ? id : nil))
        }

        if ranges["target"] != nil || ranges["action"] != nil {
            guard idIsValid else { return fail("\"id\" must be an integer or a string of at most \(MessageID.maxStringBytes) bytes") }
            var envelope = Envelope(kind: .request)
            if ranges["id"] != nil, id == nil { return fail("\"id\" must not be null; omit it for a oneway request") }
            envelope.id = id
            envelope.idRange = ranges["id"]
            guard let target = value("target")?.stringValue else { return fail("\"target\" must be a string") }
            guard NameRules.isValidTarget(target) else { return fail("invalid target name \(JSONValue.string(target))") }
            guard let action = value("action")?.stringValue else { return fail("\"action\" must be a string") }
            guard NameRules.isValidAction(action) else { return fail("invalid action name \(JSONValue.string(action))") }
            envelope.target = target
            envelope.action = action
            if let range = ranges["params"] {
                guard frame[range.lowerBound] == UInt8(ascii: "{") else { return fail("\"params\" must be an object") }
                envelope.paramsRange = range
            }
            if let timeout = value("timeout_ms") {
                guard let milliseconds = timeout.intValue, milliseconds > 0 else {
                    return fail("\"timeout_ms\" must be a positive integer")
                }
                envelope.timeoutMs = milliseconds
            }
            if let more = value("more") {
                guard let flag = more.boolValue else { return fail("\"more\" must be a boolean") }
                envelope.more = flag
            }
            envelope.callerRange = ranges["caller"]
            return .success(envelope)
        }

        if let eventName = value("event") {
            var envelope = Envelope(kind: .event)
            guard let name = eventName.stringValue, NameRules.isValidEvent(name) else {
                return fail("\"event\" must be a valid event name")
            }
            envelope.event = name
            envelope.dataRange = ranges["data"]
            return .success(envelope)
        }

        if ranges["id"] != nil, ranges["result"] != nil || ranges["error"] != nil {
            guard idIsValid else { return fail("\"id\" must be an integer or a string") }
            guard (ranges["result"] == nil) != (ranges["error"] == nil) else {
                return fail("a response has exactly one of \"result\" and \"error\"")
            }
            var envelope = Envelope(kind: .response)
            envelope.id = id
            envelope.idRange = ranges["id"]
            envelope.resultRange = ranges["result"]
            if let range = ranges["error"] {
                guard let error = value("error"), MediatorError(json: error) != nil, error["message"]?.stringValue != nil else {
                    return fail("\"error\" must be an object with string \"code\" and \"message\"")
                }
                envelope.errorRange = range
            }
            if let continues = value("continues") {
                guard let flag = continues.boolValue else { return fail("\"continues\" must be a boolean") }
                envelope.continues = flag
            }
            return .success(envelope)
        }

        return fail("not a request, response or event: a request has \"target\" and \"action\", a response \"id\" and \"result\" or \"error\", an event \"event\"")
    }
}
