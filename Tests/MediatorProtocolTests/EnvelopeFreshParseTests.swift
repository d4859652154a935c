import Testing

@testable import MediatorProtocol

/// `parse(_:intoFresh:)` fills a just-made envelope without making it anew:
/// it must give what `parse(_:into:)` gives into an envelope that held
/// another frame, for every kind and for frames it refuses.
@Suite struct EnvelopeFreshParseTests {
    static let frames = [
        #"{"target":"Bench","action":"echo","id":1,"params":{"s":"x"},"timeout_ms":5,"more":true}"#,
        #"{"id":"a","result":{"s":"x"},"continues":true}"#,
        #"{"id":2,"error":{"code":"timeout","message":"m"}}"#,
        #"{"event":"a.b","data":[1]}"#,
        #"{"target":"T","action":"a","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"k=v"}"#,
        #"{"id":3,"result":1,"error":{}}"#,
        #"{"target":1,"action":"a","id":4}"#,
        #"{"nothing":true}"#,
    ]

    /// An envelope with members a frame of another kind does not set.
    static func used() -> Envelope {
        var envelope = Envelope(kind: .request)
        let frame = Array(#"{"target":"Old","action":"old","id":"old","params":{},"timeout_ms":9,"more":true,"caller":{}}"#.utf8)
        _ = frame.withUnsafeBytes { EnvelopeParser.parse($0, into: &envelope) }
        return envelope
    }

    @Test(arguments: frames)
    func freshMatchesUsed(frame: String) {
        let bytes = Array(frame.utf8)
        var fresh = Envelope(kind: .request)
        var used = Self.used()
        let freshFailure = bytes.withUnsafeBytes { EnvelopeParser.parse($0, intoFresh: &fresh) }
        let usedFailure = bytes.withUnsafeBytes { EnvelopeParser.parse($0, into: &used) }
        #expect(freshFailure == usedFailure)
        if freshFailure == nil { #expect(fresh == used) }
        var freshPayloads = EnvelopeParser.Payloads()
        var usedPayloads = EnvelopeParser.Payloads()
        var decodedFresh = Envelope(kind: .request)
        var decodedUsed = Self.used()
        let decodedFreshFailure = bytes.withUnsafeBytes { EnvelopeParser.parse($0, intoFresh: &decodedFresh, decoding: &freshPayloads) }
        let decodedUsedFailure = bytes.withUnsafeBytes { EnvelopeParser.parse($0, into: &decodedUsed, decoding: &usedPayloads) }
        #expect(decodedFreshFailure == decodedUsedFailure)
        if decodedFreshFailure == nil {
            #expect(decodedFresh == decodedUsed)
            #expect(freshPayloads.params == usedPayloads.params && freshPayloads.result == usedPayloads.result)
        }
    }
}
