import Foundation
import MediatorProtocol
import Testing

extension Integration {
    /// Issue 12: a trace started in one Swift process continues in the
    /// component's process, through the real daemon; both sides use an
    /// in-memory tracer (`mediator-trace-probe`) and print their spans.
    @Suite("Trace context across processes")
    struct TraceContext {
        @Test("the component's server span is the child of the client's client span, in the same trace; the monitor shows traceparent")
        func traceCrossesProcesses() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let probe = Paths.executable("mediator-trace-probe")
            let component = try world.spawn(
                probe, ["component", "--socket", daemon.socketPath, "--target", "TraceProbe"], label: "probe-component")
            try component.waitForLine("ready", within: .seconds(20))

            let monitor = try world.peer(daemon)
            _ = try monitor.result("mediator", "hello", params: ["protocol": 1])
            _ = try monitor.result("mediator", "subscribe", params: ["events": ["mediator.monitor"]])
            _ = try monitor.result("mediator", "monitor", params: ["targets": ["TraceProbe"]])

            let client = try ChildProcess.run(
                probe, ["client", "--socket", daemon.socketPath, "--target", "TraceProbe", "--action", "echo"],
                within: .seconds(30))
            #expect(client.status == 0, "\(client)")
            let clientLines = ChildProcess.lines(client.stdout).compactMap { try? JSONValue.parse($0) }
            #expect(clientLines.first?["result"] == ["n": 1])
            let clientSpan = try #require(clientLines.first { $0["name"] == "TraceProbe/echo" }, "\(client)")
            let root = try #require(clientLines.first { $0["name"] == "probe" }, "\(client)")
            #expect(clientSpan["kind"] == "client")
            #expect(clientSpan["parent_span_id"] == root["span_id"])

            var serverSpan: JSONValue?
            try waitUntil("the component's server span\(component.logTail())", within: .seconds(10)) {
                serverSpan = component.stdoutLines.compactMap { try? JSONValue.parse($0) }.first {
                    $0["name"] == "TraceProbe/echo"
                }
                return serverSpan != nil
            }
            #expect(serverSpan?["kind"] == "server")
            #expect(serverSpan?["trace_id"] == clientSpan["trace_id"])
            #expect(serverSpan?["parent_span_id"] == clientSpan["span_id"])
            #expect(serverSpan?["span_id"] != clientSpan["span_id"])

            // The monitor records the forwarded line: traceparent as the component got it.
            let record = try monitor.receive(within: .seconds(10)) {
                $0["event"] == "mediator.monitor" && $0["data"]?["type"] == "request"
            }
            let traceID = clientSpan["trace_id"]?.stringValue ?? "?"
            let spanID = clientSpan["span_id"]?.stringValue ?? "?"
            #expect(record["data"]?["message"]?["traceparent"] == .string("00-\(traceID)-\(spanID)-01"))
            #expect(record["data"]?["message"]?["tracestate"] == "mediator-test=1")
        }
    }
}
