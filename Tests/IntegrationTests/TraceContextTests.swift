import Foundation
import MediatorProtocol
import Testing

extension Integration {
    /// Issue 12: a trace started in one Swift process continues in the
    /// component's process, through the real daemon; both sides use an
    /// in-memory tracer (`mediator-trace-probe`) and print their spans.
    @Suite("Trace context across processes")
    struct TraceContext {
        static let probe = Paths.executable("mediator-trace-probe")

        /// `mediator-trace-probe component` serving TraceProbe; it prints its spans as JSON lines.
        static func probeComponent(_ world: World, _ daemon: DaemonProcess) throws -> ChildProcess {
            let component = try world.spawn(
                probe, ["component", "--socket", daemon.socketPath, "--target", "TraceProbe"], label: "probe-component")
            try component.waitForLine("ready", within: .seconds(20))
            return component
        }

        @Test("the component's server span is the child of the client's client span, in the same trace; the monitor shows traceparent")
        func traceCrossesProcesses() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try Self.probeComponent(world, daemon)

            let monitor = try world.peer(daemon)
            _ = try monitor.result("mediator", "hello", params: ["protocol": 1])
            _ = try monitor.result("mediator", "subscribe", params: ["events": ["mediator.monitor"]])
            _ = try monitor.result("mediator", "monitor", params: ["targets": ["TraceProbe"]])

            let client = try ChildProcess.run(
                Self.probe, ["client", "--socket", daemon.socketPath, "--target", "TraceProbe", "--action", "echo"],
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

        @Test("mediatorctl call --traceparent continues a given trace in the component; a malformed one is refused")
        func mediatorctlContinuesAGivenTrace() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try Self.probeComponent(world, daemon)
            let cli = CLI(daemon)
            let (traceID, parentID) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
            let call = try cli.run(
                "call", ["TraceProbe", "echo", "n=1", "--traceparent", "00-\(traceID)-\(parentID)-01", "--tracestate", "ci=7"])
            #expect(call.status == 0, "\(call)")
            var serverSpan: JSONValue?
            try waitUntil("the component's server span\(component.logTail())", within: .seconds(10)) {
                serverSpan = component.stdoutLines.compactMap { try? JSONValue.parse($0) }.first { $0["name"] == "TraceProbe/echo" }
                return serverSpan != nil
            }
            #expect(serverSpan?["trace_id"] == .string(traceID))
            #expect(serverSpan?["parent_span_id"] == .string(parentID))

            for bad in ["00-\(traceID)-0000000000000000-01", "not-a-traceparent", "00-\(traceID.uppercased())-\(parentID)-01"] {
                let refused = try cli.run("call", ["TraceProbe", "echo", "--traceparent", bad])
                #expect(refused.status == 2 && refused.stderr.contains("traceparent"), "\(bad): \(refused)")
            }
            let alone = try cli.run("call", ["TraceProbe", "echo", "--tracestate", "a=1"])
            #expect(alone.status == 2, "\(alone)")
        }
    }
}
