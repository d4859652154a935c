import MediatorProtocol
import Testing
import TraceTesting
import Tracing

@testable import MediatorClient

/// The tracing as interceptors (issue 27): where in the chain the client's
/// and the component's spans are made, and where they are when placed by
/// hand.
@Suite("Tracing as interceptors")
struct InterceptorTracingTests {
    /// Calls again, once, a call that failed with `target_not_found` (what
    /// the fake daemon answers for an unknown target).
    struct RetryOnce: ClientInterceptor {
        func intercept(
            _ request: ClientRequest, next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
        ) async throws(MediatorError) -> ClientResponse {
            do throws(MediatorError) {
                return try await next(request)
            } catch {
                return try await next(request)
            }
        }
    }

    /// Refuses every call but `open`.
    struct Refusing: ServerInterceptor {
        func intercept(
            _ context: CallContext, next: @Sendable (CallContext) async throws -> ServerResponse
        ) async throws -> ServerResponse {
            guard context.action == "open" else { throw MediatorError(.forbidden, "closed") }
            return try await next(context)
        }
    }

    /// The client's tracing is innermost: each attempt of a retry is a span,
    /// and its request carries that span.
    @Test func eachAttemptIsItsOwnClientSpan() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let tracer = W3CInMemoryTracer()
        let client = try await withTimeout {
            try await MediatorClient.connect(socketPath: fake.path, tracer: tracer, interceptors: [RetryOnce()])
        }
        let error = await mediatorError { try await client.call(target: "Nope", action: "x") }
        #expect(error?.code == .targetNotFound)
        let spans = tracer.recorder.finishedSpans.filter { $0.operationName == "Nope/x" }
        #expect(spans.count == 2)
        #expect(spans.allSatisfy { $0.status?.code == .error })
        let sent = try await fake.received.wait(for: 2, "two attempts") { $0.action == "x" }
        #expect(Set(sent.compactMap { $0.message["traceparent"]?.stringValue }) == Set(spans.map { "00-\($0.traceID)-\($0.spanID)-01" }))
        await client.close()
    }

    /// Placed first by hand, it makes one span around both attempts, and
    /// the client adds no tracing of its own.
    @Test func aTracingInterceptorPlacedFirstSpansTheRetries() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let tracer = W3CInMemoryTracer()
        let client = try await withTimeout {
            try await MediatorClient.connect(
                socketPath: fake.path, interceptors: [TracingClientInterceptor(tracer: tracer), RetryOnce()])
        }
        _ = await mediatorError { try await client.call(target: "Nope", action: "x") }
        let spans = tracer.recorder.finishedSpans.filter { $0.operationName == "Nope/x" }
        #expect(spans.count == 1)
        #expect(spans.first?.errors.count == 1)
        let sent = try await fake.received.wait(for: 2, "two attempts") { $0.action == "x" }
        let span = try #require(spans.first)
        #expect(sent.map { $0.message["traceparent"] } == Array(repeating: .string("00-\(span.traceID)-\(span.spanID)-01"), count: 2))
        await client.close()
    }

    /// The component's tracing is outermost: a call its interceptors refuse
    /// is still a span, with the refusal recorded.
    @Test func aRefusedCallIsAServerSpanWithTheRefusal() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let tracer = W3CInMemoryTracer()
        var component = Component(target: "Svc", tracer: tracer, interceptors: [Refusing()])
        component.addAction("shut") { _ in "ran" }
        try await serving(component, on: fake) { peer in
            peer.send(["id": 5, "target": "Svc", "action": "shut", "params": [:]])
            let answer = try await fake.received.first("answer") { $0.id == 5 }
            #expect(answer.message["error"]?["code"] == "forbidden")
            let span = try #require(try await TracingTests.finished(tracer, 1).first)
            #expect(span.operationName == "Svc/shut")
            #expect(span.kind == .server)
            #expect(span.status?.code == .error)
            #expect(span.attributes.get("mediator.error_code") == .string("forbidden"))
        }
    }

    /// Placed after the check by hand, only the calls that pass it are spans.
    @Test func aTracingInterceptorPlacedAfterACheckSpansOnlyWhatPasses() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let tracer = W3CInMemoryTracer()
        var component = Component(target: "Svc", interceptors: [Refusing(), TracingServerInterceptor(tracer: tracer)])
        component.addAction("shut") { _ in "ran" }
        component.addAction("open") { _ in "ran" }
        try await serving(component, on: fake) { peer in
            peer.send(["id": 5, "target": "Svc", "action": "shut", "params": [:]])
            peer.send(["id": 6, "target": "Svc", "action": "open", "params": [:]])
            _ = try await fake.received.wait(for: 2, "answers") { $0.id == 5 || $0.id == 6 }
            let spans = try await TracingTests.finished(tracer, 1)
            #expect(spans.map(\.operationName) == ["Svc/open"])
            #expect(spans.first?.status == nil)
        }
    }
}
