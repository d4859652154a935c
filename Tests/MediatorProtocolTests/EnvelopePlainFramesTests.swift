import Testing

@testable import MediatorProtocol

/// `parsePlainResult` and `parsePlainRequest` read mediatord's usual frames
/// without the general parser: a frame they read must give the envelope and
/// payload the general parser gives, and they must leave to it every frame
/// it refuses.
@Suite struct EnvelopePlainFramesTests {
    static let caller = #"{"pid":12,"uid":1000,"gid":1000,"name":"bench"}"#
    static let traceparent = #""00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01""#

    /// Frames the plain paths read.
    static let plain = [
        #"{"id":0,"result":null}"#,
        #"{"id":7,"result":{"s":"x","n":[1,2.5,true]}}"#,
        #"{"id":123456789012345678,"result":"caf\u00e9"}"#,
        #"{"id":1,"target":"Bench","action":"echo","params":{},"timeout_ms":30000,"caller":\#(caller)}"#,
        #"{"id":2,"target":"org.x.Y","action":"get-all","params":{"k":[{}]},"timeout_ms":1,"more":true,"caller":\#(caller)}"#,
        #"{"id":3,"target":"T","action":"a","params":{},"timeout_ms":5,"caller":{},"traceparent":\#(traceparent)}"#,
        #"{"id":4,"target":"T","action":"a","params":{},"timeout_ms":5,"caller":{},"traceparent":\#(traceparent),"tracestate":"k=v"}"#,
        #"{"id":5,"target":"T","action":"a","params":{},"timeout_ms":5,"caller":{},"traceparent":"bad"}"#,
    ]

    /// Frames left to the general parser: read by it, or refused.
    static let general = [
        #"{"id":1,"result":1,"continues":true}"#,
        #"{"id":1,"result":1,"fds":1}"#,
        #"{"id":"a","result":1}"#,
        #"{"id":-1,"result":1}"#,
        #"{"id":01,"result":1}"#,
        #"{"id":1.5,"result":1}"#,
        #"{"id":1234567890123456789,"result":1}"#,
        #"{"id":1,"result":1} "#,
        #"{"id":1,"result":1}}"#,
        #"{"id":1, "result":1}"#,
        #"{"id":1,"result":"\ud800"}"#,
        #"{"id":1,"result":[1,]}"#,
        #"{"id":1,"result":}"#,
        #"{"id":1,"result""#,
        #"{"id":1,"error":{"code":"failed","message":"m"}}"#,
        #"{"id":1,"target":"Bench","action":"echo","params":[],"timeout_ms":1,"caller":{}}"#,
        #"{"id":1,"target":"Bench","action":"echo","params":{},"timeout_ms":0,"caller":{}}"#,
        #"{"id":1,"target":"Be\u006ech","action":"echo","params":{},"timeout_ms":1,"caller":{}}"#,
        #"{"id":1,"target":"bad name","action":"echo","params":{},"timeout_ms":1,"caller":{}}"#,
        #"{"id":1,"target":"Bench","action":"","params":{},"timeout_ms":1,"caller":{}}"#,
        #"{"id":1,"target":"Bench","action":"echo","params":{},"timeout_ms":1,"caller":{},"fds":1}"#,
        #"{"id":1,"target":"Bench","action":"echo","params":{},"timeout_ms":1,"caller":{"a":}}"#,
        #"{"id":1,"target":"Bench","action":"echo","params":{},"timeout_ms":1,"more":false,"caller":{}}"#,
        #"{"id":1,"target":"T","action":"a","params":{},"timeout_ms":5,"caller":{},"tracestate":"k=v"}"#,
        #"{"id":1,"target":"T","action":"a","params":{},"timeout_ms":5,"caller":{},"traceparent":1}"#,
        #"{"target":"Bench","action":"echo","params":{},"timeout_ms":1,"caller":{}}"#,
        #"{"event":"a.b","data":[1]}"#,
    ]

    /// What the plain paths make of a frame: nil when they leave it.
    static func plainReading(_ bytes: [UInt8]) -> (Envelope, EnvelopeParser.Payloads)? {
        var envelope = Envelope(kind: .request)
        var payloads = EnvelopeParser.Payloads()
        var names = EnvelopeParser.RequestNames()
        let read = bytes.withUnsafeBytes {
            EnvelopeParser.parsePlainResult($0, intoFresh: &envelope, result: &payloads.result)
                || EnvelopeParser.parsePlainRequest($0, intoFresh: &envelope, params: &payloads.params, names: &names)
        }
        return read ? (envelope, payloads) : nil
    }

    @Test(arguments: plain)
    func readsAsTheGeneralParser(frame: String) throws {
        let bytes = Array(frame.utf8)
        let (envelope, payloads) = try #require(Self.plainReading(bytes))
        var general = Envelope(kind: .request)
        var generalPayloads = EnvelopeParser.Payloads()
        let failure = bytes.withUnsafeBytes { EnvelopeParser.parse($0, intoFresh: &general, decoding: &generalPayloads) }
        #expect(failure == nil)
        #expect(envelope == general)
        #expect(payloads.result == generalPayloads.result && payloads.params == generalPayloads.params)
    }

    /// The last request's names are taken only when the bytes are the same.
    @Test func takesTheLastNamesOnlyWhenTheSame() throws {
        var names = EnvelopeParser.RequestNames()
        for (target, action) in [("Bench", "echo"), ("Bench", "echo"), ("Bench", "echo2"), ("Bench2", "echo2"), ("Bench", "echo")] {
            let frame = Array(#"{"id":1,"target":"\#(target)","action":"\#(action)","params":{},"timeout_ms":5,"caller":{}}"#.utf8)
            var envelope = Envelope(kind: .request)
            var params: JSONValue?
            #expect(frame.withUnsafeBytes { EnvelopeParser.parsePlainRequest($0, intoFresh: &envelope, params: &params, names: &names) })
            #expect(envelope.target == target && envelope.action == action)
        }
        // A name that is not valid is refused, whatever came before.
        let bad = Array(#"{"id":1,"target":"Bench","action":"ec ho","params":{},"timeout_ms":5,"caller":{}}"#.utf8)
        var envelope = Envelope(kind: .request)
        var params: JSONValue?
        #expect(!bad.withUnsafeBytes { EnvelopeParser.parsePlainRequest($0, intoFresh: &envelope, params: &params, names: &names) })
    }

    @Test(arguments: general)
    func leavesTheRestToTheGeneralParser(frame: String) {
        #expect(Self.plainReading(Array(frame.utf8)) == nil)
    }
}
