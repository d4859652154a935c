// mediator-trace-probe: the two sides of the cross-process trace test
// (issue 12). Each side traces with an in-memory tracer and prints its
// finished spans on stdout as JSON lines (name, trace_id, span_id,
// parent_span_id, kind, status).
//
//   mediator-trace-probe component --socket PATH [--target TraceProbe]
//       serves `echo` (and `fail`); prints `ready`, then each span as it ends.
//   mediator-trace-probe client --socket PATH [--target TraceProbe] [--action echo]
//       calls TARGET/ACTION inside a root span, prints its spans and exits.
import Foundation
import MediatorClient
import MediatorProtocol
import TraceTesting
import Tracing

func option(_ name: String, default value: String? = nil) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return value }
    return arguments[index + 1]
}

/// One line on stdout, written at once (the test reads stdout from a file while the probe runs).
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("mediator-trace-probe: \(message)\n".utf8))
    exit(2)
}

let role = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : ""
let socket = option("--socket")
let target = option("--target", default: "TraceProbe") ?? "TraceProbe"
let tracer = W3CInMemoryTracer()

switch role {
case "component":
    var component = Component(target: target, tracer: tracer)
    component.addAction("echo") { context in context.params }
    component.addAction("fail") { _ in throw MediatorError(.failed, "asked to fail") }
    // Spans end after the response is sent: they are printed as they finish.
    let printer = Task {
        while !Task.isCancelled {
            for span in tracer.recorder.popFinishedSpans() { emit(span.jsonRecord.jsonText) }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
    component.socketPath = socket
    component.onRegistered = { emit("ready") }
    do {
        try await component.run()
    } catch {
        fail("\(error)")
    }
    printer.cancel()
case "client":
    let action = option("--action", default: "echo") ?? "echo"
    do {
        let client = try await MediatorClient.connect(socketPath: socket, name: "trace-probe", tracer: tracer)
        let result: JSONValue? = try await tracer.withSpan("probe", ofKind: .internal) { _ in
            do {
                return try await client.call(target: target, action: action, params: ["n": 1])
            } catch let error as MediatorError where error.code == .failed {
                return nil
            }
        }
        emit((["result": result ?? .null] as JSONValue).jsonText)
        for span in tracer.recorder.popFinishedSpans() { emit(span.jsonRecord.jsonText) }
        await client.close()
    } catch {
        fail("\(error)")
    }
default:
    fail("usage: mediator-trace-probe component|client --socket PATH [--target NAME] [--action NAME]")
}
