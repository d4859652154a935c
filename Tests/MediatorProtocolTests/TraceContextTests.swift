import Testing

@testable import MediatorProtocol

private let validParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

private func parsed(_ frame: String, sourceLocation: SourceLocation = #_sourceLocation) -> (Envelope, [UInt8])? {
    let bytes = Array(frame.utf8)
    switch EnvelopeParser.parse(bytes) {
    case .success(let envelope): return (envelope, bytes)
    case .failure(let error):
        Issue.record("unexpected failure: \(error.error)", sourceLocation: sourceLocation)
        return nil
    }
}

private func text(_ frame: [UInt8], _ range: Range<Int>?) -> String? {
    range.map { String(decoding: frame[$0], as: UTF8.self) }
}

@Suite struct TraceContextTests {
    @Test func requestKeepsWellFormedTraceMembersAsTheirBytes() throws {
        let (envelope, frame) = try #require(parsed(
            #"{"id":1,"target":"T","action":"a","traceparent":"\#(validParent)","tracestate":"congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"}"#))
        #expect(text(frame, envelope.traceparentRange) == "\"\(validParent)\"")
        #expect(text(frame, envelope.tracestateRange) == #""congo=t61rcWkgMzE,rojo=00f067aa0ba902b7""#)
    }

    @Test func requestWithoutTraceMembersHasNoRanges() throws {
        let (envelope, _) = try #require(parsed(#"{"id":1,"target":"T","action":"a","params":{"traceparent":"x"}}"#))
        #expect(envelope.traceparentRange == nil)
        #expect(envelope.tracestateRange == nil)
    }

    @Test func tracestateWithoutTraceparentIsDropped() throws {
        let (envelope, _) = try #require(parsed(#"{"target":"T","action":"a","tracestate":"a=b"}"#))
        #expect(envelope.tracestateRange == nil)
    }

    /// A bad trace member never fails the request (W3C: ignore it); it is dropped.
    @Test(arguments: [
        "\"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7\"",  // too short
        "\"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01\"",  // uppercase
        "\"00-00000000000000000000000000000000-00f067aa0ba902b7-01\"",  // zero trace id
        "\"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01\"",  // zero parent id
        "\"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\"",  // version ff
        "\"00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01\"",  // separators
        "\"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra\"",  // over 55 bytes
        "\"\\u0030\\u0030-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\"",  // escapes
        "17", "null", "{\"a\":1}", "\"\"",
    ])
    func malformedTraceparentIsDroppedWithItsTracestate(_ value: String) throws {
        let (envelope, _) = try #require(parsed(#"{"id":1,"target":"T","action":"a","traceparent":\#(value),"tracestate":"a=b"}"#))
        #expect(envelope.traceparentRange == nil)
        #expect(envelope.tracestateRange == nil)
        #expect(envelope.target == "T")
    }

    @Test func tracestateOverTheLimitIsDroppedButTraceparentKept() throws {
        let long = String(repeating: "k", count: TraceContext.maxTracestateBytes + 1)
        let (envelope, _) = try #require(parsed(#"{"target":"T","action":"a","traceparent":"\#(validParent)","tracestate":"\#(long)"}"#))
        #expect(envelope.traceparentRange != nil)
        #expect(envelope.tracestateRange == nil)

        let atLimit = String(repeating: "k", count: TraceContext.maxTracestateBytes)
        let (kept, _) = try #require(parsed(#"{"target":"T","action":"a","traceparent":"\#(validParent)","tracestate":"\#(atLimit)"}"#))
        #expect(kept.tracestateRange != nil)
    }

    @Test func nonStringOrNonASCIITracestateIsDropped() throws {
        for value in ["12", "\"caf\u{e9}=1\"", "[\"a=b\"]"] {
            let (envelope, _) = try #require(parsed(#"{"target":"T","action":"a","traceparent":"\#(validParent)","tracestate":\#(value)}"#))
            #expect(envelope.traceparentRange != nil)
            #expect(envelope.tracestateRange == nil, "\(value)")
        }
    }

    /// Checked as the component reads it, after unescaping (issue 23): an
    /// escaped control character is still one, and the limits count
    /// characters, not the escapes that write them.
    static let escapedTracestates: [(written: String, kept: Bool)] = [
        (#"a=1\r\nb=2"#, false),
        (#"a=\u0000"#, false),
        (#"a=\u001b[31m"#, false),
        (#"a=\t1"#, false),
        (#"a=caf\u00e9"#, false),
        (#"a=\ud83d\ude00"#, false),
        (#"a=\"q\",b=back\\slash,c=\/"#, true),
        (#"\u0061=1"#, true),
        (String(repeating: #"\u0061"#, count: 512), true),
        (String(repeating: #"\u0061"#, count: 513), false),
        (String(repeating: "a", count: 511) + #"\u0061"#, true),
        (String(repeating: "a", count: 512) + #"\u0061"#, false),
        (Array(repeating: "k=v", count: 32).joined(separator: ","), true),
        (Array(repeating: "k=v", count: 33).joined(separator: ","), false),
        (Array(repeating: #"k=\u0076"#, count: 33).joined(separator: ","), false),
        // Empty members do not count (W3C).
        (Array(repeating: "k=v", count: 32).joined(separator: ", ,") + ",", true),
    ]

    @Test(arguments: escapedTracestates)
    func tracestateIsCheckedAfterUnescaping(written: String, kept: Bool) throws {
        let (envelope, frame) = try #require(parsed(
            #"{"target":"T","action":"a","traceparent":"\#(validParent)","tracestate":"\#(written)"}"#))
        #expect(envelope.traceparentRange != nil)
        // Kept, it is forwarded as written.
        #expect(text(frame, envelope.tracestateRange) == (kept ? "\"\(written)\"" : nil))
    }

    @Test func lastRepeatedTraceparentWinsAndEscapedNameIsRecognised() throws {
        let other = "00-11111111111111111111111111111111-2222222222222222-00"
        let (envelope, frame) = try #require(parsed(
            #"{"target":"T","action":"a","traceparent":"\#(validParent)","trace\u0070arent":"\#(other)"}"#))
        #expect(text(frame, envelope.traceparentRange) == "\"\(other)\"")
    }

    @Test func traceMembersOfResponsesAndEventsAreIgnored() throws {
        let (response, _) = try #require(parsed(#"{"id":1,"result":null,"traceparent":"\#(validParent)"}"#))
        #expect(response.kind == .response)
        #expect(response.traceparentRange == nil)
        let (event, _) = try #require(parsed(#"{"event":"x.y","traceparent":"\#(validParent)"}"#))
        #expect(event.traceparentRange == nil)
    }

    @Test func stringChecksMatchTheByteChecks() {
        #expect(TraceContext.isValidTraceparent(validParent))
        #expect(TraceContext.isValidTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09"))
        #expect(!TraceContext.isValidTraceparent(validParent + "-"))
        #expect(TraceContext.isValidTracestate("a=b,c=d"))
        // Its JSON form has escapes, which the daemon reads through.
        #expect(TraceContext.isValidTracestate("a=\"b\\\""))
        #expect(!TraceContext.isValidTracestate("a=\r\n"))
        #expect(!TraceContext.isValidTracestate(String(repeating: "x", count: 513)))
        #expect(!TraceContext.isValidTracestate(Array(repeating: "k=v", count: 33).joined(separator: ",")))
    }

    @Test func outboundRequestCarriesTraceMembersOnlyWhenGiven() throws {
        let plain = OutboundMessage.request(id: .int(1), target: "T", action: "a")
        #expect(!String(decoding: plain, as: UTF8.self).contains("trace"))
        let traced = OutboundMessage.request(id: .int(1), target: "T", action: "a", traceparent: validParent, tracestate: "a=b")
        let envelope = try EnvelopeParser.parse(Array(traced.dropLast())).get()
        let frame = Array(traced)
        #expect(text(frame, envelope.traceparentRange) == "\"\(validParent)\"")
        #expect(text(frame, envelope.tracestateRange) == "\"a=b\"")
    }
}
