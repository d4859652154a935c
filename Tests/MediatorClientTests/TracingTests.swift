import Foundation
import InMemoryTracing
import MediatorProtocol
import Testing
import TraceTesting
import Tracing

@testable import MediatorClient

/// Trace context (issue 12): the client injects its `.client` span's context
/// into each request, and a component runs each handler in a `.server` span
/// that continues the caller's trace. The tracer is passed explicitly:
/// `InstrumentationSystem.bootstrap` may run once per process, and these
/// tests also check the untraced default.
@Suite("Tracing through MediatorClient and Component")
struct TracingTests {
    static let callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let callerSpan = "00f067aa0ba902b7"

    @Test func withoutATracerARequestCarriesNoTraceMembers() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        _ = try await withTimeout { try await client.call(target: "Echo", action: "echo", params: ["n": 1]) }
        let call = try await fake.received.first("echo") { $0.action == "echo" }
        #expect(call.message["traceparent"] == nil)
        #expect(call.message["tracestate"] == nil)
        await client.close()
    }

    @Test func aCallIsAClientSpanWhoseContextTheRequestCarries() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let tracer = W3CInMemoryTracer()
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path, tracer: tracer) }
        try await tracer.withSpan("root") { _ in
            _ = try await withTimeout { try await client.call(target: "Echo", action: "echo", params: ["n": 1]) }
        }
        let spans = tracer.recorder.finishedSpans
        let root = try #require(spans.first { $0.operationName == "root" })
        let span = try #require(spans.first { $0.operationName == "Echo/echo" })
        #expect(span.kind == .client)
        #expect(span.traceID == root.traceID)
        #expect(span.parentSpanID == root.spanID)
        #expect(span.attributes.get("rpc.system") == .string("mediator"))
        #expect(spans.count == 2, "hello is not traced")

        let call = try await fake.received.first("echo") { $0.action == "echo" }
        #expect(call.message["traceparent"] == .string("00-\(span.traceID)-\(span.spanID)-01"))
        #expect(call.message["tracestate"] == "mediator-test=1")
        #expect(call.message["params"] == ["n": 1])
        await client.close()
    }

    @Test func aFailedCallRecordsTheErrorOnItsSpan() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let tracer = W3CInMemoryTracer()
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path, tracer: tracer) }
        let error = await mediatorError { try await client.call(target: "Nope", action: "x") }
        #expect(error?.code == .targetNotFound)
        let span = try #require(tracer.recorder.finishedSpans.first { $0.operationName == "Nope/x" })
        #expect(span.status?.code == .error)
        #expect(span.errors.count == 1)
        #expect(span.parentSpanID == nil, "no current span: a root")
        await client.close()
    }

    @Test func aStreamIsOneClientSpanThatEndsWithTheStream() async throws {
        let fake = try await FakeDaemon.start { core, peer, message in
            if message["action"] == "count", let id = message["id"] {
                peer.send(["id": id, "result": 1, "continues": true])
                peer.send(["id": id, "result": 2])
                core.received.post(Received(peer: peer, message: message))
                return
            }
            FakeDaemon.standard(core, peer, message)
        }
        defer { Task { await fake.shutdown() } }
        let tracer = W3CInMemoryTracer()
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path, tracer: tracer) }
        let values = try await withTimeout {
            var values: [JSONValue] = []
            for try await value in client.stream(target: "Counter", action: "count") { values.append(value) }
            return values
        }
        #expect(values == [1, 2])
        let span = try #require(tracer.recorder.finishedSpans.first { $0.operationName == "Counter/count" })
        let call = try await fake.received.first("count") { $0.action == "count" }
        #expect(call.message["traceparent"] == .string("00-\(span.traceID)-\(span.spanID)-01"))
        await client.close()
    }

    /// The component's side: the handler runs in a `.server` span whose
    /// parent is the span named by the request's `traceparent`, and its own
    /// calls continue the same trace.
    @Test func aHandlerRunsInAServerSpanThatContinuesTheCallersTrace() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let tracer = W3CInMemoryTracer()
        var component = Component(target: "Svc", tracer: tracer)
        component.addAction("nested") { context in
            try await context.client.call(target: "Echo", action: "echo", params: ["via": "component"])
        }
        try await serving(component, on: fake) { peer in
            peer.send([
                "id": 41, "target": "Svc", "action": "nested", "params": [:], "caller": ["pid": 1, "uid": 2, "gid": 3],
                "traceparent": .string("00-\(Self.callerTrace)-\(Self.callerSpan)-01"), "tracestate": "a=b",
            ])
            _ = try await fake.received.first("answer") { $0.id == 41 }
            let nested = try await fake.received.first("nested call") { $0.action == "echo" }
            let spans = try await Self.finished(tracer, 2)
            let server = try #require(spans.first { $0.operationName == "Svc/nested" })
            #expect(server.kind == .server)
            #expect(server.traceID == Self.callerTrace)
            #expect(server.parentSpanID == Self.callerSpan)
            #expect(server.status == nil)
            let client = try #require(spans.first { $0.operationName == "Echo/echo" })
            #expect(client.kind == .client)
            #expect(client.traceID == Self.callerTrace)
            #expect(client.parentSpanID == server.spanID)
            #expect(nested.message["traceparent"] == .string("00-\(Self.callerTrace)-\(client.spanID)-01"))
            #expect(!spans.contains { $0.operationName.hasPrefix("mediator/") }, "register is not traced")
        }
    }

    @Test func aFailingHandlersSpanRecordsTheErrorAndARequestWithoutTraceIsARoot() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let tracer = W3CInMemoryTracer()
        var component = Component(target: "Svc", tracer: tracer)
        component.addAction("fail") { _ in throw MediatorError(ErrorCode("custom"), "custom failure") }
        try await serving(component, on: fake) { peer in
            peer.send(["id": 7, "target": "Svc", "action": "fail", "params": [:]])
            let answer = try await fake.received.first("answer") { $0.id == 7 }
            #expect(answer.message["error"]?["code"] == "custom")
            let span = try #require(try await Self.finished(tracer, 1).first)
            #expect(span.operationName == "Svc/fail")
            #expect(span.parentSpanID == nil)
            #expect(span.status?.code == .error)
            #expect(span.errors.count == 1)
        }
    }

    /// The spans end just after the response is sent: waits for `count`.
    static func finished(_ tracer: W3CInMemoryTracer, _ count: Int) async throws -> [FinishedInMemorySpan] {
        for _ in 0..<250 {
            let spans = tracer.recorder.finishedSpans
            if spans.count >= count { return spans }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TimedOut(what: "\(count) finished spans")
    }
}
