import Testing

@testable import MediatorProtocol

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// The text of `range` inside `frame`.
private func text(_ frame: [UInt8], _ range: Range<Int>?) -> String? {
    guard let range else { return nil }
    return String(decoding: frame[range], as: UTF8.self)
}

private func accepted(_ frame: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> Envelope? {
    switch EnvelopeParser.parse(frame) {
    case .success(let envelope): return envelope
    case .failure(let error):
        Issue.record("unexpected failure: \(error.error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// One malformed frame, the id the error must carry, and what the case is about.
struct MalformedCase: CustomTestStringConvertible, Sendable {
    var name: String
    var frame: [UInt8]
    var id: MessageID?

    init(_ name: String, _ frame: String, id: MessageID?) {
        self.name = name
        self.frame = Array(frame.utf8)
        self.id = id
    }

    init(_ name: String, bytes: [UInt8], id: MessageID?) {
        self.name = name
        self.frame = bytes
        self.id = id
    }

    var testDescription: String { name }
}

private let longID = String(repeating: "i", count: 257)
private let maxID = String(repeating: "i", count: 256)
private let deepOpen = String(repeating: "[", count: 100_000)

@Suite struct EnvelopeParserTests {
    // MARK: - Malformed frames

    static let malformed: [MalformedCase] = [
        // Not a JSON object.
        MalformedCase("not JSON", "hello", id: nil),
        MalformedCase("not JSON with braces", "{hello}", id: nil),
        MalformedCase("whitespace only", "   \t ", id: nil),
        MalformedCase("JSON array", #"[{"id":1,"target":"a","action":"b"}]"#, id: nil),
        MalformedCase("empty array", "[]", id: nil),
        MalformedCase("JSON string", #""{\"id\":1}""#, id: nil),
        MalformedCase("JSON number", "42", id: nil),
        MalformedCase("JSON null", "null", id: nil),
        MalformedCase("JSON true", "true", id: nil),
        MalformedCase("single quotes", "{'id':1}", id: nil),
        MalformedCase("unquoted key", "{id:1}", id: nil),
        // Truncated or broken objects: the id read before the break is kept.
        MalformedCase("truncated after id", #"{"id":5,"target":"x""#, id: .int(5)),
        MalformedCase("truncated in params", #"{"id":5,"target":"x","action":"y","params":{"a":"#, id: .int(5)),
        MalformedCase("truncated string id", #"{"id":"abc","target":"#, id: .string("abc")),
        MalformedCase("truncated before id", #"{"target":"x","id""#, id: nil),
        MalformedCase("truncated before any member", "{", id: nil),
        MalformedCase("trailing comma", #"{"id":6,"target":"a","action":"b",}"#, id: .int(6)),
        MalformedCase("missing comma", #"{"id":6 "target":"a","action":"b"}"#, id: .int(6)),
        MalformedCase("missing colon", #"{"id":6,"target" "a","action":"b"}"#, id: .int(6)),
        MalformedCase("data after the object", #"{"id":6,"target":"a","action":"b"} x"#, id: .int(6)),
        MalformedCase("two objects", #"{"id":6,"target":"a","action":"b"}{}"#, id: .int(6)),
        MalformedCase("bad literal in a member", #"{"id":6,"target":"a","action":"b","more":tru}"#, id: .int(6)),
        MalformedCase("bad number in params", #"{"id":6,"target":"a","action":"b","params":{"n":01}}"#, id: .int(6)),
        MalformedCase("bad escape in params", #"{"id":6,"target":"a","action":"b","params":{"s":"\x"}}"#, id: .int(6)),
        MalformedCase("break after a bad id", #"{"id":[1],"target":"#, id: nil),
        MalformedCase("break after a long id", #"{"id":"\#(longID)","target":"#, id: nil),
        // Bad id types.
        MalformedCase("id array", #"{"id":[1],"target":"a","action":"b"}"#, id: nil),
        MalformedCase("id object", #"{"id":{"n":1},"target":"a","action":"b"}"#, id: nil),
        MalformedCase("id true", #"{"id":true,"target":"a","action":"b"}"#, id: nil),
        MalformedCase("id false", #"{"id":false,"target":"a","action":"b"}"#, id: nil),
        MalformedCase("id fraction", #"{"id":1.5,"target":"a","action":"b"}"#, id: nil),
        MalformedCase("id beyond int64", #"{"id":1e300,"target":"a","action":"b"}"#, id: nil),
        MalformedCase("id null on a request", #"{"id":null,"target":"a","action":"b"}"#, id: nil),
        MalformedCase("id string of 257 bytes", #"{"id":"\#(longID)","target":"a","action":"b"}"#, id: nil),
        MalformedCase("id string of 257 bytes on a response", #"{"id":"\#(longID)","result":1}"#, id: nil),
        MalformedCase("id array on a response", #"{"id":[7],"result":1}"#, id: nil),
        MalformedCase("id object on a response", #"{"id":{},"error":{"code":"x","message":"m"}}"#, id: nil),
        MalformedCase("duplicate id, last is bad", #"{"id":1,"id":[2],"target":"a","action":"b"}"#, id: nil),
        MalformedCase("duplicate id, last is good", #"{"id":[1],"id":2,"target":"a"}"#, id: .int(2)),
        // Requests with bad members.
        MalformedCase("target missing action", #"{"id":1,"target":"Detail"}"#, id: .int(1)),
        MalformedCase("action missing target", #"{"id":1,"action":"show"}"#, id: .int(1)),
        MalformedCase("target not a string", #"{"id":1,"target":5,"action":"show"}"#, id: .int(1)),
        MalformedCase("target null", #"{"id":"s","target":null,"action":"show"}"#, id: .string("s")),
        MalformedCase("action not a string", #"{"id":1,"target":"Detail","action":["show"]}"#, id: .int(1)),
        MalformedCase("bad target name: digit first", #"{"id":2,"target":"1Detail","action":"show"}"#, id: .int(2)),
        MalformedCase("bad target name: empty", #"{"id":2,"target":"","action":"show"}"#, id: .int(2)),
        MalformedCase("bad target name: space", #"{"id":2,"target":"De tail","action":"show"}"#, id: .int(2)),
        MalformedCase("bad target name: underscore first", #"{"id":2,"target":"_x","action":"show"}"#, id: .int(2)),
        MalformedCase(
            "bad target name: 129 bytes", #"{"id":2,"target":"\#(String(repeating: "t", count: 129))","action":"show"}"#,
            id: .int(2)),
        MalformedCase("bad action name", #"{"id":3,"target":"Detail","action":"sh/ow"}"#, id: .int(3)),
        MalformedCase("bad action name: empty", #"{"id":3,"target":"Detail","action":""}"#, id: .int(3)),
        MalformedCase("params array", #"{"id":4,"target":"a","action":"b","params":[1]}"#, id: .int(4)),
        MalformedCase("params string", #"{"id":4,"target":"a","action":"b","params":"{}"}"#, id: .int(4)),
        MalformedCase("params null", #"{"id":4,"target":"a","action":"b","params":null}"#, id: .int(4)),
        MalformedCase("params number", #"{"id":4,"target":"a","action":"b","params":1}"#, id: .int(4)),
        MalformedCase("timeout_ms zero", #"{"id":5,"target":"a","action":"b","timeout_ms":0}"#, id: .int(5)),
        MalformedCase("timeout_ms zero double", #"{"id":5,"target":"a","action":"b","timeout_ms":0.0}"#, id: .int(5)),
        MalformedCase("timeout_ms negative", #"{"id":5,"target":"a","action":"b","timeout_ms":-1}"#, id: .int(5)),
        MalformedCase("timeout_ms non-integer", #"{"id":5,"target":"a","action":"b","timeout_ms":1.5}"#, id: .int(5)),
        MalformedCase("timeout_ms string", #"{"id":5,"target":"a","action":"b","timeout_ms":"5000"}"#, id: .int(5)),
        MalformedCase("timeout_ms null", #"{"id":5,"target":"a","action":"b","timeout_ms":null}"#, id: .int(5)),
        MalformedCase("timeout_ms bool", #"{"id":5,"target":"a","action":"b","timeout_ms":true}"#, id: .int(5)),
        MalformedCase("timeout_ms huge", #"{"id":5,"target":"a","action":"b","timeout_ms":1e30}"#, id: .int(5)),
        MalformedCase("more string", #"{"id":6,"target":"a","action":"b","more":"true"}"#, id: .int(6)),
        MalformedCase("more number", #"{"id":6,"target":"a","action":"b","more":1}"#, id: .int(6)),
        MalformedCase("more null", #"{"id":6,"target":"a","action":"b","more":null}"#, id: .int(6)),
        // Responses.
        MalformedCase("result and error", #"{"id":9,"result":1,"error":{"code":"x","message":"m"}}"#, id: .int(9)),
        MalformedCase("error without code", #"{"id":9,"error":{"message":"m"}}"#, id: .int(9)),
        MalformedCase("error code not a string", #"{"id":9,"error":{"code":1,"message":"m"}}"#, id: .int(9)),
        MalformedCase("error without message", #"{"id":9,"error":{"code":"x"}}"#, id: .int(9)),
        MalformedCase("error message not a string", #"{"id":9,"error":{"code":"x","message":2}}"#, id: .int(9)),
        MalformedCase("error a string", #"{"id":"r","error":"timeout"}"#, id: .string("r")),
        MalformedCase("error null", #"{"id":9,"error":null}"#, id: .int(9)),
        MalformedCase("continues not a bool", #"{"id":9,"result":1,"continues":"yes"}"#, id: .int(9)),
        // Events.
        MalformedCase("event bad name", #"{"event":"1bad"}"#, id: nil),
        MalformedCase("event name with space", #"{"event":"user login","data":1}"#, id: nil),
        MalformedCase("event empty name", #"{"event":""}"#, id: nil),
        MalformedCase("event not a string", #"{"event":5}"#, id: nil),
        MalformedCase("event null", #"{"event":null}"#, id: nil),
        // None of the three kinds.
        MalformedCase("empty object", "{}", id: nil),
        MalformedCase("id alone", #"{"id":1}"#, id: .int(1)),
        MalformedCase("result without id", #"{"result":1}"#, id: nil),
        MalformedCase("error without id", #"{"error":{"code":"x","message":"m"}}"#, id: nil),
        MalformedCase("unknown members only", #"{"id":"u","foo":"bar"}"#, id: .string("u")),
        MalformedCase("data without event", #"{"data":{}}"#, id: nil),
        // Nesting beyond the limit.
        MalformedCase("100 000 nested arrays", deepOpen, id: nil),
        MalformedCase("100 000 nested arrays in params", #"{"id":10,"target":"a","action":"b","params":"# + deepOpen, id: .int(10)),
        MalformedCase(
            "100 000 nested objects in data", #"{"id":10,"event":"e","data":"# + String(repeating: #"{"a":"#, count: 100_000),
            id: .int(10)),
        MalformedCase(
            "128 nested arrays in a member",
            #"{"id":11,"target":"a","action":"b","x":"# + String(repeating: "[", count: 128) + String(repeating: "]", count: 128)
                + "}", id: .int(11)),
        // Strings: invalid UTF-8, control characters, lone surrogates.
        MalformedCase(
            "invalid UTF-8 in target", bytes: bytes(#"{"id":12,"target":""#) + [0xFF] + bytes(#"","action":"b"}"#), id: .int(12)),
        MalformedCase(
            "invalid UTF-8 in params", bytes: bytes(#"{"id":12,"target":"a","action":"b","params":{"k":""#) + [0xC3, 0x28] + bytes(#""}}"#),
            id: .int(12)),
        MalformedCase(
            "invalid UTF-8 in a nested key", bytes: bytes(#"{"id":12,"target":"a","action":"b","params":{""#) + [0x80] + bytes(#"":1}}"#),
            id: .int(12)),
        MalformedCase("invalid UTF-8 in result", bytes: bytes(#"{"id":12,"result":""#) + [0xFE] + bytes(#""}"#), id: .int(12)),
        MalformedCase("invalid UTF-8 in data", bytes: bytes(#"{"event":"e","data":[""#) + [0xED, 0xA0, 0x80] + bytes(#""]}"#), id: nil),
        MalformedCase("invalid UTF-8 in a member name", bytes: bytes(#"{"id":12,""#) + [0xFF] + bytes(#"":1,"target":"a","action":"b"}"#), id: .int(12)),
        MalformedCase("invalid UTF-8 in the id", bytes: bytes(#"{"id":""#) + [0xFF] + bytes(#"","result":1}"#), id: nil),
        MalformedCase("overlong UTF-8 in an unknown member", bytes: bytes(#"{"id":12,"x":""#) + [0xC0, 0xAF] + bytes(#"","event":"e"}"#), id: .int(12)),
        MalformedCase("control character in target", "{\"id\":13,\"target\":\"a\tb\",\"action\":\"b\"}", id: .int(13)),
        MalformedCase("control character in params", "{\"id\":13,\"target\":\"a\",\"action\":\"b\",\"params\":{\"k\":\"\u{01}\"}}", id: .int(13)),
        MalformedCase("control character in a member name", "{\"id\":13,\"a\u{1F}\":1,\"target\":\"a\",\"action\":\"b\"}", id: .int(13)),
        MalformedCase("NUL in result", bytes: bytes(#"{"id":13,"result":""#) + [0x00] + bytes(#""}"#), id: .int(13)),
        MalformedCase("lone high surrogate in params", #"{"id":14,"target":"a","action":"b","params":{"k":"\ud800"}}"#, id: .int(14)),
        MalformedCase("lone low surrogate in params", #"{"id":14,"target":"a","action":"b","params":{"k":"x\udc00y"}}"#, id: .int(14)),
        MalformedCase("high surrogate then letter in data", #"{"event":"e","data":"\ud83d\u0041"}"#, id: nil),
        MalformedCase("lone surrogate in target", #"{"id":14,"target":"\ud800","action":"b"}"#, id: .int(14)),
        MalformedCase("lone surrogate in the id of a request", #"{"id":"\ud800","target":"a","action":"b"}"#, id: nil),
        MalformedCase("lone surrogate in the id of a response", #"{"id":"\udfff","result":1}"#, id: nil),
        MalformedCase("lone surrogate in a member name", #"{"id":14,"\ud800":1,"event":"e"}"#, id: .int(14)),
        MalformedCase("lone surrogate in more", #"{"id":14,"target":"a","action":"b","more":"\ud800"}"#, id: .int(14)),
        // A lone surrogate passes only in the result or error of an otherwise well-formed response.
        MalformedCase("lone surrogate in the result of a request", #"{"id":14,"target":"a","action":"b","result":"\ud800"}"#, id: .int(14)),
        MalformedCase("lone surrogate in a result beside an error", #"{"id":14,"result":"\ud800","error":{"code":"x","message":"m"}}"#, id: .int(14)),
        MalformedCase("lone surrogate in a result without an id", #"{"result":"\ud800"}"#, id: nil),
        MalformedCase("lone surrogate in a result given again", #"{"id":14,"result":"\ud800","result":1}"#, id: .int(14)),
        MalformedCase("lone surrogate in an error without an id", #"{"error":{"code":"x","message":"\ud800"}}"#, id: nil),
        MalformedCase("lone surrogate in the result of an event", #"{"event":"e","result":"\ud800"}"#, id: nil),
        MalformedCase("lone surrogate in a result, then broken", #"{"id":14,"result":"\ud800",}"#, id: .int(14)),
    ]

    @Test(arguments: malformed)
    func malformedFrame(_ testCase: MalformedCase) {
        switch EnvelopeParser.parse(testCase.frame) {
        case .success(let envelope):
            Issue.record("accepted as \(envelope.kind)")
        case .failure(let failure):
            #expect(failure.error.code == .badRequest)
            #expect(failure.error.code.rawValue == "bad_request")
            #expect(!failure.error.message.isEmpty)
            #expect(failure.error.data == nil)
            #expect(failure.id == testCase.id)
        }
    }

    @Test func maxDepthParameterIsHonoured() {
        let frame = bytes(#"{"id":1,"target":"a","action":"b","params":{"a":[[1]]}}"#)
        // The top-level object is depth 1, params 2, then 3 and 4.
        #expect((try? EnvelopeParser.parse(frame, maxDepth: 4).get()) != nil)
        let failure = EnvelopeParser.parse(frame, maxDepth: 3)
        guard case .failure(let error) = failure else {
            Issue.record("accepted beyond maxDepth")
            return
        }
        #expect(error.error.code == .badRequest)
        #expect(error.id == .int(1))
    }

    @Test func nestingUpToTheLimitIsAccepted() {
        // The envelope is depth 1, so a member may nest 127 more levels.
        let nested = String(repeating: "[", count: 127) + String(repeating: "]", count: 127)
        let frame = bytes(#"{"id":1,"target":"a","action":"b","x":"# + nested + "}")
        #expect(accepted(frame)?.kind == .request)
    }

    // MARK: - Valid requests

    @Test func requestWithEveryMember() {
        let frame = bytes(
            #"{"id": 7, "target": "Detail", "action": "show", "params": {"title": "Hi"}, "timeout_ms": 5000, "more": true, "caller": {"pid": 1}}"#
        )
        guard let envelope = accepted(frame) else { return }
        #expect(envelope.kind == .request)
        #expect(envelope.id == .int(7))
        #expect(text(frame, envelope.idRange) == "7")
        #expect(envelope.target == "Detail")
        #expect(envelope.action == "show")
        #expect(text(frame, envelope.paramsRange) == #"{"title": "Hi"}"#)
        #expect(envelope.paramsRange == 58..<73)
        #expect(envelope.timeoutMs == 5000)
        #expect(envelope.more == true)
        #expect(text(frame, envelope.callerRange) == #"{"pid": 1}"#)
        #expect(envelope.resultRange == nil)
        #expect(envelope.errorRange == nil)
        #expect(envelope.dataRange == nil)
        #expect(envelope.isError == false)
        #expect(envelope.continues == false)
        #expect(envelope.event == "")
    }

    @Test func onewayRequestWithoutIDOrParams() {
        let frame = bytes(#"{"target":"Detail","action":"show"}"#)
        guard let envelope = accepted(frame) else { return }
        #expect(envelope.kind == .request)
        #expect(envelope.id == nil)
        #expect(envelope.idRange == nil)
        #expect(envelope.paramsRange == nil)
        #expect(envelope.timeoutMs == nil)
        #expect(envelope.more == false)
        #expect(envelope.callerRange == nil)
    }

    @Test func paramsRangeIsTheExactBytes() {
        let params = #"{ "a" : [ 1, 2.5e3, "x\"}" ] , "b" : { } }"#
        let frame = bytes(#"{"target":"a","params" :  "# + params + #"  ,"action":"b"}"#)
        guard let envelope = accepted(frame) else { return }
        #expect(text(frame, envelope.paramsRange) == params)
        let empty = bytes(#"{"target":"a","action":"b","params":{}}"#)
        #expect(text(empty, accepted(empty)?.paramsRange) == "{}")
        // Non-ASCII bytes before params shift the range by bytes, not characters.
        let unicode = bytes(#"{"id":"é😀","target":"a","action":"b","params":{"k":"ü"}}"#)
        guard let other = accepted(unicode) else { return }
        #expect(other.id == .string("é😀"))
        #expect(text(unicode, other.idRange) == #""é😀""#)
        #expect(text(unicode, other.paramsRange) == #"{"k":"ü"}"#)
    }

    @Test func parsingASliceGivesRangesRelativeToTheSlice() {
        let line = bytes(#"xxxx{"id":1,"target":"a","action":"b","params":{"p":1}}yyyy"#)
        let result = line.withUnsafeBytes { buffer in
            EnvelopeParser.parse(UnsafeRawBufferPointer(rebasing: buffer[4..<(line.count - 4)]))
        }
        guard case .success(let envelope) = result else {
            Issue.record("slice rejected")
            return
        }
        let frame = Array(line[4..<(line.count - 4)])
        #expect(text(frame, envelope.paramsRange) == #"{"p":1}"#)
        #expect(text(frame, envelope.idRange) == "1")
    }

    @Test(arguments: [
        ("5000", Int64(5000)),
        ("5000.0", 5000),
        ("5e3", 5000),
        ("1", 1),
        ("9223372036854775807", Int64.max),
    ])
    func timeoutForms(raw: String, expected: Int64) {
        let frame = bytes(#"{"id":1,"target":"a","action":"b","timeout_ms":"# + raw + "}")
        #expect(accepted(frame)?.timeoutMs == expected)
    }

    @Test(arguments: [
        (#""abc""#, MessageID.string("abc")),
        (#""""#, .string("")),
        (#""\#(maxID)""#, .string(maxID)),
        (#""\u00e9""#, .string("é")),
        ("0", .int(0)),
        ("-3", .int(-3)),
        ("5.0", .int(5)),
        ("9223372036854775807", .int(Int64.max)),
        ("-9223372036854775808", .int(Int64.min)),
    ])
    func idForms(raw: String, expected: MessageID) {
        let request = bytes(#"{"id":"# + raw + #","target":"a","action":"b"}"#)
        guard let envelope = accepted(request) else { return }
        #expect(envelope.id == expected)
        #expect(text(request, envelope.idRange) == raw)
        let response = bytes(#"{"result":null,"id":"# + raw + "}")
        #expect(accepted(response)?.id == expected)
    }

    @Test func idOf256BytesCountsBytesNotCharacters() {
        // 128 two-byte characters: 256 bytes, valid; one more byte is not.
        let twoByte = String(repeating: "é", count: 128)
        #expect(accepted(bytes(#"{"id":"\#(twoByte)","target":"a","action":"b"}"#))?.id == .string(twoByte))
        let tooLong = bytes(#"{"id":"\#(twoByte)x","target":"a","action":"b"}"#)
        guard case .failure(let failure) = EnvelopeParser.parse(tooLong) else {
            Issue.record("257-byte id accepted")
            return
        }
        #expect(failure.id == nil)
    }

    @Test func moreFalseAndMoreTrue() {
        #expect(accepted(bytes(#"{"id":1,"target":"a","action":"b","more":true}"#))?.more == true)
        #expect(accepted(bytes(#"{"id":1,"target":"a","action":"b","more":false}"#))?.more == false)
    }

    @Test func namesAtTheirLimits() {
        let target = "T" + String(repeating: "x", count: 127)
        let action = "_" + String(repeating: "y", count: 127)
        let frame = bytes(#"{"target":"\#(target)","action":"\#(action)"}"#)
        #expect(accepted(frame)?.target == target)
        #expect(accepted(frame)?.action == action)
        #expect(accepted(bytes(#"{"target":"mediator","action":"ping"}"#))?.target == "mediator")
    }

    // MARK: - Valid responses

    @Test func responseWithResult() {
        let frame = bytes(#"{"id":7,"result":{"shown":true}}"#)
        guard let envelope = accepted(frame) else { return }
        #expect(envelope.kind == .response)
        #expect(envelope.id == .int(7))
        #expect(text(frame, envelope.resultRange) == #"{"shown":true}"#)
        #expect(envelope.errorRange == nil)
        #expect(envelope.isError == false)
        #expect(envelope.continues == false)
    }

    @Test(arguments: ["null", "0", #""s""#, "[]", "false", #"[1,{"a":null}]"#])
    func responseResultOfAnyType(result: String) {
        let frame = bytes(#"{"result":"# + result + #","id":"r"}"#)
        guard let envelope = accepted(frame) else { return }
        #expect(envelope.kind == .response)
        #expect(envelope.id == .string("r"))
        #expect(text(frame, envelope.resultRange) == result)
    }

    @Test func responseWithNullID() {
        let frame = bytes(#"{"id":null,"error":{"code":"bad_request","message":"no"}}"#)
        guard let envelope = accepted(frame) else { return }
        #expect(envelope.kind == .response)
        #expect(envelope.id == nil)
        #expect(text(frame, envelope.idRange) == "null")
    }

    @Test func responseWithError() {
        let error = #"{"code":"target_not_found","message":"no component serves target \"Detail\"","data":[1]}"#
        let frame = bytes(#"{"id":7,"error":"# + error + "}")
        guard let envelope = accepted(frame) else { return }
        #expect(envelope.kind == .response)
        #expect(envelope.isError)
        #expect(envelope.resultRange == nil)
        #expect(text(frame, envelope.errorRange) == error)
        // A component's own code travels unchanged.
        let custom = bytes(#"{"id":8,"error":{"code":"my_code","message":""}}"#)
        #expect(accepted(custom)?.isError == true)
    }

    /// Well-formed JSON that stands for no Unicode text: the broker's
    /// reading lets it through, flagged, so that the caller can be answered
    /// `invalid_result` rather than wait for an answer dropped as malformed.
    @Test(arguments: [
        #""\ud800""#, #"["\ude00\ud83d"]"#, #""\ud83d\u0041""#, #"{"k":"a\udfffb"}"#, #""\ud83d\ude00\ud800""#,
        #"["\ud800", "\ud800\ud800"]"#,
    ])
    func responseWithLoneSurrogateInItsResult(result: String) {
        let frame = bytes(#"{"id":7,"result":"# + result + #","continues":true}"#)
        guard let envelope = accepted(frame) else { return }
        #expect(envelope.kind == .response)
        #expect(envelope.id == .int(7))
        #expect(envelope.answerHasLoneSurrogate)
        #expect(envelope.continues)
        #expect(text(frame, envelope.resultRange) == result)
    }

    @Test func responseWithLoneSurrogateInItsError() {
        let frame = bytes(#"{"id":7,"error":{"code":"x","message":"a\udc00"}}"#)
        guard let envelope = accepted(frame) else { return }
        #expect(envelope.kind == .response)
        #expect(envelope.answerHasLoneSurrogate)
        #expect(text(frame, envelope.errorRange) == #"{"code":"x","message":"a\udc00"}"#)
    }

    @Test func responseWithSurrogatePairsIsNotFlagged() {
        let frame = bytes(#"{"id":7,"result":"\ud83d\ude00 \uD83D\uDE00"}"#)
        #expect(accepted(frame)?.answerHasLoneSurrogate == false)
    }

    @Test(arguments: [
        (#"{"id":1,"target":"a","action":"b","params":{"k":"x\udc00y"}}"#, #"\udc00"#),
        (#"{"id":1,"target":"a","action":"b","result":"\ud83d\u0041"}"#, #"\ud83d"#),
        (#"{"id":1,"result":"\ud800","continues":"no"}"#, #"\ud800"#),
    ])
    func loneSurrogateIsNamedWhereItIs(frame: String, escape: String) {
        guard case .failure(let failure) = EnvelopeParser.parse(bytes(frame)) else {
            Issue.record("accepted")
            return
        }
        let offset = frame.utf8.count - frame.utf8.drop(while: { $0 != UInt8(ascii: "\\") }).count
        #expect(failure.error.message == "malformed JSON: lone surrogate escape \(escape) (half of a UTF-16 pair: no character) at byte \(offset)")
        #expect(failure.id == .int(1))
    }

    @Test func responseContinues() {
        let frame = bytes(#"{"id":7,"result":1,"continues":true}"#)
        #expect(accepted(frame)?.continues == true)
        let final = bytes(#"{"id":7,"result":1,"continues":false}"#)
        #expect(accepted(final)?.continues == false)
    }

    // MARK: - Valid events

    @Test func eventWithData() {
        let data = #"{"target": "Detail", "instance": 3, "pid": 4121}"#
        let frame = bytes(#"{"event":"mediator.registered","data":"# + data + "}")
        guard let envelope = accepted(frame) else { return }
        #expect(envelope.kind == .event)
        #expect(envelope.event == "mediator.registered")
        #expect(text(frame, envelope.dataRange) == data)
        #expect(envelope.id == nil)
    }

    @Test func eventWithoutData() {
        let frame = bytes(#"{"event":"user.login"}"#)
        guard let envelope = accepted(frame) else { return }
        #expect(envelope.kind == .event)
        #expect(envelope.event == "user.login")
        #expect(envelope.dataRange == nil)
        let nullData = bytes(#"{"data":null,"event":"e"}"#)
        #expect(text(nullData, accepted(nullData)?.dataRange) == "null")
    }

    // MARK: - Leniency the contract asks for

    @Test func unknownMembersAreIgnored() {
        let request = bytes(#"{"v2":{"deep":[1,2,{"x":"y"}]},"target":"a","x-y":null,"action":"b","id":3,"z":1e400}"#)
        guard let envelope = accepted(request) else { return }
        #expect(envelope.kind == .request)
        #expect(envelope.id == .int(3))
        #expect(envelope.paramsRange == nil)
        #expect(accepted(bytes(#"{"id":1,"result":2,"extra":{"continues":"no"}}"#))?.kind == .response)
        #expect(accepted(bytes(#"{"event":"e","data":1,"sender":"x","id":[1]}"#))?.kind == .event)
    }

    @Test func whitespaceAroundAndInside() {
        let frame = bytes(" \t\r {\r\n \"id\" :\t7 ,\n\"target\" : \"a\" , \"action\":\"b\" } \t\r")
        guard let envelope = accepted(frame) else { return }
        #expect(envelope.kind == .request)
        #expect(envelope.id == .int(7))
        #expect(text(frame, envelope.idRange) == "7")
        #expect(envelope.target == "a")
        #expect(accepted(bytes(" { \"event\" : \"e\" } "))?.kind == .event)
    }

    @Test func duplicateMemberNamesLastWins() {
        let request = bytes(#"{"target":"A","action":"x","target":"B","params":{"n":1},"params":{"n":2},"id":1,"id":"two"}"#)
        guard let envelope = accepted(request) else { return }
        #expect(envelope.target == "B")
        #expect(text(request, envelope.paramsRange) == #"{"n":2}"#)
        #expect(envelope.id == .string("two"))
        #expect(text(request, envelope.idRange) == #""two""#)

        let response = bytes(#"{"id":1,"id":2,"result":"a","result":"b"}"#)
        guard let other = accepted(response) else { return }
        #expect(other.id == .int(2))
        #expect(text(response, other.resultRange) == #""b""#)

        // A bad value is repaired by a later good one, and the reverse.
        #expect(accepted(bytes(#"{"target":"a","action":"b","timeout_ms":0,"timeout_ms":10}"#))?.timeoutMs == 10)
        guard case .failure = EnvelopeParser.parse(bytes(#"{"target":"a","action":"b","timeout_ms":10,"timeout_ms":0}"#)) else {
            Issue.record("last timeout_ms 0 accepted")
            return
        }
    }

    @Test func largeFrame() {
        let big = String(repeating: "x", count: 1 << 20)
        let frame = bytes(#"{"id":1,"target":"a","action":"b","params":{"blob":""# + big + #""}}"#)
        guard let envelope = accepted(frame) else { return }
        #expect(envelope.paramsRange?.count == (1 << 20) + 11)
    }

    @Test func envelopeErrorInit() {
        let error = EnvelopeError(MediatorError(.badRequest, "m"), id: .int(3))
        #expect(error.error.code == .badRequest)
        #expect(error.id == .int(3))
    }
}
