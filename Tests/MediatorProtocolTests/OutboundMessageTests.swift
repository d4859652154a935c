import Testing

@testable import MediatorProtocol

private func line(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// Cuts `bytes` with a framer and parses the single frame it must hold.
private func roundTrip(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> (Envelope, [UInt8])? {
    var framer = LineFramer(maxFrameBytes: ProtocolConstants.defaultMaxFrameBytes)
    let step = bytes.withUnsafeBytes { framer.next($0) }
    guard case .frame(let start, let length, let consumed) = step else {
        Issue.record("no frame: \(step)", sourceLocation: sourceLocation)
        return nil
    }
    #expect(consumed == bytes.count, sourceLocation: sourceLocation)
    let frame = Array(bytes[start..<(start + length)])
    switch EnvelopeParser.parse(frame) {
    case .success(let envelope): return (envelope, frame)
    case .failure(let error):
        Issue.record("rejected: \(error.error)", sourceLocation: sourceLocation)
        return nil
    }
}

private func slice(_ frame: [UInt8], _ range: Range<Int>?) -> String? {
    range.map { String(decoding: frame[$0], as: UTF8.self) }
}

@Suite struct OutboundMessageTests {
    // MARK: - Exact bytes

    @Test func requestBytes() {
        let bytes = OutboundMessage.request(
            id: .int(7), target: "Detail", action: "show", params: ["title": "Hi"], timeoutMs: 5000)
        #expect(line(bytes) == #"{"action":"show","id":7,"params":{"title":"Hi"},"target":"Detail","timeout_ms":5000}"# + "\n")
    }

    @Test func onewayRequestBytes() {
        let bytes = OutboundMessage.request(id: nil, target: "a", action: "b")
        #expect(line(bytes) == #"{"action":"b","params":{},"target":"a"}"# + "\n")
    }

    @Test func requestWithMoreAndStringID() {
        let bytes = OutboundMessage.request(id: .string("q-1"), target: "Logs", action: "tail", more: true)
        #expect(line(bytes) == #"{"action":"tail","id":"q-1","more":true,"params":{},"target":"Logs"}"# + "\n")
        // more: false is left out.
        let plain = OutboundMessage.request(id: .int(1), target: "a", action: "b", more: false)
        #expect(!line(plain).contains("more"))
    }

    @Test func resultBytes() {
        #expect(line(OutboundMessage.result(id: .int(7), ["shown": true])) == #"{"id":7,"result":{"shown":true}}"# + "\n")
        #expect(line(OutboundMessage.result(id: nil, .null)) == #"{"id":null,"result":null}"# + "\n")
        #expect(
            line(OutboundMessage.result(id: .string("s"), [1, 2], continues: true))
                == #"{"continues":true,"id":"s","result":[1,2]}"# + "\n")
        #expect(!line(OutboundMessage.result(id: .int(1), 1, continues: false)).contains("continues"))
    }

    @Test func errorBytes() {
        let error = MediatorError(.targetNotFound, "no component serves target \"Detail\"")
        #expect(
            line(OutboundMessage.error(id: .int(7), error))
                == #"{"error":{"code":"target_not_found","message":"no component serves target \"Detail\""},"id":7}"# + "\n")
        let withData = MediatorError(ErrorCode("my_code"), "bad", data: ["field": "x"])
        #expect(
            line(OutboundMessage.error(id: nil, withData))
                == #"{"error":{"code":"my_code","data":{"field":"x"},"message":"bad"},"id":null}"# + "\n")
    }

    @Test func eventBytes() {
        #expect(
            line(OutboundMessage.event("mediator.registered", data: ["target": "Detail", "instance": 3, "pid": 4121]))
                == #"{"data":{"instance":3,"pid":4121,"target":"Detail"},"event":"mediator.registered"}"# + "\n")
        #expect(line(OutboundMessage.event("user.login")) == #"{"event":"user.login"}"# + "\n")
        #expect(line(OutboundMessage.event("e", data: .null)) == #"{"data":null,"event":"e"}"# + "\n")
    }

    @Test func exactlyOneLFAtTheEnd() {
        let tricky: JSONValue = ["text": "a\nb\r\nc\u{0}", "nested": ["k\n": ["\n"]]]
        let messages = [
            OutboundMessage.request(id: .string("x\ny"), target: "a", action: "b", params: tricky),
            OutboundMessage.result(id: .int(1), tricky),
            OutboundMessage.error(id: .int(1), MediatorError(.internal, "line\nbreak", data: tricky)),
            OutboundMessage.event("e", data: tricky),
            OutboundMessage.line(.string("\n")),
        ]
        for message in messages {
            #expect(message.last == 0x0A)
            #expect(message.filter { $0 == 0x0A }.count == 1, "\(line(message))")
            #expect(!message.contains(0x0D))
        }
        #expect(OutboundMessage.line(.int(1)) == [UInt8(ascii: "1"), 0x0A])
    }

    // MARK: - Round trips through the framer and the envelope parser

    @Test func requestRoundTrip() {
        let params: JSONValue = ["title": "Hi é😀", "n": [1, 2.5, nil]]
        let bytes = OutboundMessage.request(
            id: .int(42), target: "Detail", action: "show", params: params, timeoutMs: 1500, more: true)
        guard let (envelope, frame) = roundTrip(bytes) else { return }
        #expect(envelope.kind == .request)
        #expect(envelope.id == .int(42))
        #expect(envelope.target == "Detail")
        #expect(envelope.action == "show")
        #expect(envelope.timeoutMs == 1500)
        #expect(envelope.more)
        #expect(slice(frame, envelope.paramsRange) == params.jsonText)
        #expect(envelope.paramsRange.map { try? JSONParser.parse(frame[$0]) } == params)
    }

    @Test func onewayRoundTrip() {
        guard let (envelope, frame) = roundTrip(OutboundMessage.request(id: nil, target: "a", action: "_b")) else { return }
        #expect(envelope.kind == .request)
        #expect(envelope.id == nil)
        #expect(envelope.timeoutMs == nil)
        #expect(envelope.more == false)
        #expect(slice(frame, envelope.paramsRange) == "{}")
    }

    @Test func resultRoundTrip() {
        let id = MessageID.string(String(repeating: "z", count: MessageID.maxStringBytes))
        guard let (envelope, frame) = roundTrip(OutboundMessage.result(id: id, ["ok": true], continues: true)) else { return }
        #expect(envelope.kind == .response)
        #expect(envelope.id == id)
        #expect(envelope.continues)
        #expect(slice(frame, envelope.resultRange) == #"{"ok":true}"#)
        #expect(slice(frame, envelope.idRange) == id.json.jsonText)
    }

    @Test func errorRoundTrip() {
        let error = MediatorError(.timeout, "no response in 30 s", data: ["after_ms": 30000])
        guard let (envelope, frame) = roundTrip(OutboundMessage.error(id: .int(-1), error)) else { return }
        #expect(envelope.kind == .response)
        #expect(envelope.isError)
        #expect(envelope.id == .int(-1))
        let decoded = envelope.errorRange.flatMap { try? JSONParser.parse(frame[$0]) }.flatMap(MediatorError.init(json:))
        #expect(decoded == error)
    }

    @Test func eventRoundTrip() {
        guard let (envelope, frame) = roundTrip(OutboundMessage.event("user.login", data: ["user": "ann"])) else { return }
        #expect(envelope.kind == .event)
        #expect(envelope.event == "user.login")
        #expect(slice(frame, envelope.dataRange) == #"{"user":"ann"}"#)
        guard let (bare, _) = roundTrip(OutboundMessage.event("x")) else { return }
        #expect(bare.dataRange == nil)
    }

    @Test func manyMessagesOnOneStream() {
        var stream: [UInt8] = []
        for index in 0..<50 {
            stream += OutboundMessage.request(id: .int(Int64(index)), target: "t", action: "a", params: ["text": .string("line\n\(index)")])
        }
        var framer = LineFramer(maxFrameBytes: 64)
        var ids: [MessageID?] = []
        var buffer = stream[...]
        while true {
            let step = Array(buffer).withUnsafeBytes { framer.next($0) }
            guard case .frame(let start, let length, let consumed) = step else { break }
            let frame = Array(buffer.dropFirst(start).prefix(length))
            ids.append(try? EnvelopeParser.parse(frame).get().id)
            buffer = buffer.dropFirst(consumed)
        }
        #expect(ids == (0..<50).map { MessageID.int(Int64($0)) })
        #expect(buffer.isEmpty)
    }

    // MARK: - MessageID

    @Test(arguments: [
        (JSONValue.int(7), MessageID.int(7)),
        (.int(Int64.min), .int(Int64.min)),
        (.double(5.0), .int(5)),
        (.double(-2.0), .int(-2)),
        (.string(""), .string("")),
        (.string("abc"), .string("abc")),
        (.string(String(repeating: "a", count: 256)), .string(String(repeating: "a", count: 256))),
    ])
    func validIDs(json: JSONValue, expected: MessageID) {
        #expect(MessageID(json: json) == expected)
    }

    @Test(arguments: [
        JSONValue.null, .bool(true), .double(1.5), .double(1e300), .double(.nan), .double(.infinity), .array([.int(1)]),
        .object(["id": .int(1)]), .string(String(repeating: "a", count: 257)),
        .string(String(repeating: "é", count: 129)),
    ])
    func invalidIDs(json: JSONValue) {
        #expect(MessageID(json: json) == nil)
    }

    @Test func idJSONAndDescription() {
        #expect(MessageID.int(7).json == .int(7))
        #expect(MessageID.string("a").json == .string("a"))
        #expect(MessageID.int(-7).description == "-7")
        #expect(MessageID.string("a\"b").description == #""a\"b""#)
        #expect(MessageID.maxStringBytes == 256)
        // An integer id and a string of its digits are different ids.
        #expect(MessageID.int(1) != MessageID.string("1"))
        #expect(Set([MessageID.int(1), .string("1"), .int(1)]).count == 2)
    }

    // MARK: - MediatorError

    @Test func mediatorErrorJSON() {
        let error = MediatorError(.badRequest, "nope")
        #expect(error.json == ["code": "bad_request", "message": "nope"])
        #expect(error.description == "bad_request: nope")
        #expect(MediatorError(json: ["code": "x"]) == MediatorError(ErrorCode("x"), ""))
        #expect(MediatorError(json: ["code": "x", "message": "m", "data": [1]]) == MediatorError(ErrorCode("x"), "m", data: [1]))
        #expect(MediatorError(json: ["message": "m"]) == nil)
        #expect(MediatorError(json: ["code": 1, "message": "m"]) == nil)
        #expect(MediatorError(json: "bad_request") == nil)
    }

    @Test(arguments: [
        (ErrorCode.badRequest, "bad_request"), (.frameTooLarge, "frame_too_large"),
        (.unsupportedProtocol, "unsupported_protocol"), (.targetNotFound, "target_not_found"),
        (.actionNotFound, "action_not_found"), (.invalidParams, "invalid_params"),
        (.alreadyRegistered, "already_registered"), (.forbidden, "forbidden"), (.timeout, "timeout"),
        (.cancelled, "cancelled"), (.componentUnavailable, "component_unavailable"),
        (.activationFailed, "activation_failed"), (.overloaded, "overloaded"),
        (.fdsNotSupported, "fds_not_supported"), (.internal, "internal"),
    ])
    func errorCodesMatchTheContract(code: ErrorCode, raw: String) {
        #expect(code.rawValue == raw)
        #expect(code == ErrorCode(rawValue: raw))
    }
}

/// The builders write members straight into the line; the bytes must be
/// those of the same object encoded as a JSONValue (members sorted).
@Suite("OutboundMessage matches JSONValue encoding")
struct OutboundMessageEncodingTests {
    @Test(arguments: [false, true], [false, true])
    func requestsAsObjects(withOptions: Bool, withID: Bool) {
        let params: JSONValue = ["q": "a \"quoted\"\nline", "n": -12]
        let bytes = OutboundMessage.request(
            id: withID ? .string("x1") : nil, target: "Notes", action: "add", params: params,
            timeoutMs: withOptions ? 2500 : nil, more: withOptions,
            traceparent: withOptions ? "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" : nil,
            tracestate: withOptions ? "k=v" : nil)
        var members: [String: JSONValue] = ["target": "Notes", "action": "add", "params": params]
        if withID { members["id"] = "x1" }
        if withOptions {
            members["timeout_ms"] = 2500
            members["more"] = true
            members["traceparent"] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
            members["tracestate"] = "k=v"
        }
        #expect(bytes == OutboundMessage.line(.object(members)))
    }

    @Test func resultsErrorsAndEventsAsObjects() {
        #expect(OutboundMessage.result(id: .int(7), ["s": "x"], continues: true)
            == OutboundMessage.line(["id": 7, "result": ["s": "x"], "continues": true]))
        #expect(OutboundMessage.result(id: nil, .null) == OutboundMessage.line(["id": .null, "result": .null]))
        let error = MediatorError(.timeout, "late")
        #expect(OutboundMessage.error(id: .int(-3), error) == OutboundMessage.line(["id": -3, "error": error.json]))
        #expect(OutboundMessage.event("a.b", data: [1, 2]) == OutboundMessage.line(["event": "a.b", "data": [1, 2]]))
        #expect(OutboundMessage.event("a.b") == OutboundMessage.line(["event": "a.b"]))
    }
}
