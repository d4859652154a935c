import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// Trace context (issue 12): `traceparent`/`tracestate` reach the component
/// byte for byte, and nothing is added when a request carries none.
@Suite("Broker: trace context")
struct BrokerTraceTests {
    static let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    static let root = PeerCredentials(pid: 10, uid: 0, gid: 0)
    let caller1 = BrokerDriver.callerJSON(1)

    @Test func traceMembersAreForwardedByteForByteAfterCaller() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: #"["a"]"#, from: 2)
        d.send(
            #"{"tracestate" : "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE","id":1,"target":"T","action":"a","traceparent":"\#(Self.parent)","timeout_ms":100}"#,
            from: 1)
        #expect(d.take(2) == [
            #"{"id":1,"target":"T","action":"a","params":{},"timeout_ms":100,"caller":\#(caller1),"traceparent":"\#(Self.parent)","tracestate":"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"}"#
        ])
    }

    @Test func requestWithoutTraceMembersGetsNoneAdded() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: #"["a"]"#, from: 2)
        d.send(#"{"id":1,"target":"T","action":"a","timeout_ms":100}"#, from: 1)
        #expect(d.take(2) == [#"{"id":1,"target":"T","action":"a","params":{},"timeout_ms":100,"caller":\#(caller1)}"#])
    }

    /// Only a well-formed value is passed on: a forged one cannot smuggle
    /// members (or a second `caller`) into the component's line.
    @Test func malformedOrForgedTraceparentIsNotForwarded() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: #"["a"]"#, from: 2)
        let forged = [
            #""00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\",\"caller\":{\"uid\":0}""#,
            #"{"caller":{"pid":1,"uid":0,"gid":0}}"#,
            #""not-a-trace""#,
        ]
        for value in forged {
            d.send(#"{"target":"T","action":"a","timeout_ms":100,"traceparent":\#(value),"tracestate":"a=b"}"#, from: 1)
        }
        let lines = d.take(2)
        #expect(lines.count == forged.count)
        for line in lines {
            #expect(line == #"{"target":"T","action":"a","params":{},"timeout_ms":100,"caller":\#(caller1)}"#)
        }
    }

    /// Checked after unescaping (issue 23): escaped control characters do
    /// not reach the component; the traceparent still does, and a kept
    /// tracestate goes on as written.
    @Test func tracestateWithEscapedControlCharactersIsNotForwarded() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: #"["a"]"#, from: 2)
        for state in [#"a=1\r\nb=2"#, #"a=\u0000"#, #"a=\u001b]0;x\u0007"#] {
            d.send(#"{"target":"T","action":"a","timeout_ms":100,"traceparent":"\#(Self.parent)","tracestate":"\#(state)"}"#, from: 1)
        }
        d.send(#"{"target":"T","action":"a","timeout_ms":100,"traceparent":"\#(Self.parent)","tracestate":"a=\"q\""}"#, from: 1)
        let plain = #"{"target":"T","action":"a","params":{},"timeout_ms":100,"caller":\#(caller1),"traceparent":"\#(Self.parent)""#
        #expect(d.take(2) == Array(repeating: plain + "}", count: 3) + [plain + #","tracestate":"a=\"q\""}"#])
    }

    @Test func openForwardsTheOpenRequestsTraceMembers() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", actions: #"[{"name":"a","url":true}]"#, from: 2)
        d.send(
            #"{"id":"o","target":"mediator","action":"open","params":{"url":"app://T/a?x=1"},"traceparent":"\#(Self.parent)"}"#,
            from: 1)
        let forwarded = d.takeOne(2)
        #expect(forwarded?["traceparent"] == .string(Self.parent))
        #expect(forwarded?["tracestate"] == nil)
        #expect(forwarded?["params"] == ["x": "1"])
    }

    @Test func aHeldCallKeepsItsTraceMembersUntilTheComponentRegisters() {
        let d = BrokerDriver()
        let manifest = Manifest(
            file: "/m/Notes.json", target: "Notes", actions: [ActionSpec(name: "add")],
            launch: .exec(arguments: ["/bin/notes"], environment: [:], workingDirectory: nil))
        d.apply(d.broker.loadManifests([manifest], now: d.now))
        d.connect(1)
        d.send(#"{"id":1,"target":"Notes","action":"add","traceparent":"\#(Self.parent)","tracestate":"a=b"}"#, from: 1)
        #expect(d.spawns.count == 1)
        d.apply(d.broker.processStarted(spawnID: d.spawns[0].spawnID, pid: 4107, now: d.now))
        d.connect(7)
        d.send(#"{"id":"reg","target":"mediator","action":"register","params":{"target":"Notes","actions":["add"]}}"#, from: 7)
        let forwarded = d.takeJSON(7).first { $0["action"] == "add" }
        #expect(forwarded?["traceparent"] == .string(Self.parent))
        #expect(forwarded?["tracestate"] == "a=b")
    }

    @Test func theMonitorShowsTheForwardedTraceparent() {
        let d = BrokerDriver()
        d.connect(1, credentials: Self.root)
        _ = d.daemon("monitor", from: 1)
        d.connect(2)
        d.register("T", actions: #"["a"]"#, from: 2)
        d.connect(3)
        d.send(#"{"id":1,"target":"T","action":"a","traceparent":"\#(Self.parent)"}"#, from: 3)
        let records = d.takeJSON(1).compactMap { $0["data"] }
        #expect(records.first?["message"]?["traceparent"] == .string(Self.parent))
    }
}
