import Testing

@testable import MediatorProtocol

/// `parse(_:decoding:)` decodes `params`, `result` and `data` in the pass
/// that checks the frame: it must accept and refuse exactly what
/// `parse(_:)` does, and hand out what decoding the ranges afterwards gives.
@Suite struct EnvelopePayloadsTests {
    static let accepted: [String] = [
        #"{"id":1,"target":"a","action":"b","params":{"s":"text","n":-1.5e3,"t":true,"z":null}}"#,
        #"{"id":"x","target":"a","action":"b","params":{"nested":{"list":[[1],[2,{"k":"v"}]]}},"caller":{"uid":0}}"#,
        #"{"target":"a","action":"b","params":{"esc":"a\"b\\c\u00e9\ud83d\ude00\n"}}"#,
        #"{"id":2,"target":"a","action":"b"}"#,
        #"{"id":3,"target":"a","action":"b","params":{"a":1},"params":{"b":2}}"#,
        #"{"id":4,"result":{"s":"héllo"}}"#,
        #"{"id":5,"result":[1,"two",3.0,false]}"#,
        #"{"id":6,"result":"plain","continues":true}"#,
        #"{"id":7,"result":1,"result":null}"#,
        #"{"id":8,"error":{"code":"internal","message":"m"}}"#,
        #"{"event":"e","data":{"x":[]}}"#,
        #"{"event":"e"}"#,
        #" { "data" : 12 , "event" : "e" } "#,
    ]

    @Test(arguments: accepted)
    func decodesWhatTheRangesHold(_ text: String) throws {
        let frame = Array(text.utf8)
        let plain = try EnvelopeParser.parse(frame).get()
        var payloads = EnvelopeParser.Payloads()
        let decoded = try frame.withUnsafeBytes { EnvelopeParser.parse($0, decoding: &payloads) }.get()
        #expect(decoded == plain)
        func value(_ range: Range<Int>?) throws -> JSONValue? {
            try range.map { try JSONParser.parse(frame[$0]) }
        }
        #expect(payloads.params == (try value(plain.paramsRange)))
        #expect(payloads.result == (try value(plain.resultRange)))
        #expect(payloads.data == (try value(plain.dataRange)))
    }

    @Test(arguments: EnvelopeParserTests.malformed)
    func refusesWhatParseRefuses(_ testCase: MalformedCase) {
        var payloads = EnvelopeParser.Payloads()
        let decoded = testCase.frame.withUnsafeBytes { EnvelopeParser.parse($0, decoding: &payloads) }
        #expect(decoded == EnvelopeParser.parse(testCase.frame))
    }

    /// A client's reading stays strict: it could not hand such a result (or error) to
    /// its user, and the daemon never forwards one (it answers `invalid_result`).
    @Test(arguments: [#"{"id":1,"result":"\ud800"}"#, #"{"id":1,"error":{"code":"x","message":"\ud800"}}"#])
    func refusesALoneSurrogateInAnAnswerThatParsePasses(text: String) throws {
        let frame = Array(text.utf8)
        #expect(try EnvelopeParser.parse(frame).get().answerHasLoneSurrogate)
        var payloads = EnvelopeParser.Payloads()
        let decoded = frame.withUnsafeBytes { EnvelopeParser.parse($0, decoding: &payloads) }
        #expect(throws: EnvelopeError.self) { try decoded.get() }
    }

    @Test func nestingLimitIsTheSame() {
        let frames = [
            #"{"id":1,"target":"a","action":"b","params":{"a":[[1]]}}"#,
            #"{"id":1,"result":{"a":[[{"b":1}]]}}"#,
            #"{"event":"e","data":[[[[]]]]}"#,
        ]
        for text in frames {
            let frame = Array(text.utf8)
            for depth in 1...6 {
                var payloads = EnvelopeParser.Payloads()
                let decoded = frame.withUnsafeBytes { EnvelopeParser.parse($0, decoding: &payloads, maxDepth: depth) }
                #expect(decoded == EnvelopeParser.parse(frame, maxDepth: depth), "\(text) at depth \(depth)")
            }
        }
    }
}
