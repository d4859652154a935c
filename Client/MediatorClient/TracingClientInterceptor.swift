import Instrumentation
import MediatorProtocol
import Tracing

/// The client's tracing, as a ``ClientInterceptor``: each call a `.client`
/// span named `TARGET/ACTION`, the child of the current span, whose
/// context it puts in the request's `traceparent`/`tracestate`
/// (docs/tracing.md). A failed call records its error on the span; a
/// stream's span ends when the stream does.
///
/// Every client runs one, innermost (after the interceptors you give), so
/// that each request sent, each retry included, is its own span and carries
/// it: the one ``MediatorClient/connect(socketPath:name:maxFrameBytes:fds:tracer:logger:interceptors:)``
/// makes from its `tracer`. Put one in the interceptors yourself to run it
/// elsewhere in the chain (first: one span around the retries); the client
/// then adds none of its own.
///
/// With no tracer given, it uses `InstrumentationSystem`'s, looked up at
/// each call: nothing bootstrapped, it does nothing; an instrument that
/// does not trace, it passes the current `ServiceContext` on without spans.
public struct TracingClientInterceptor: ClientInterceptor {
    let tracing: CallTracing

    /// - Parameter tracer: the tracer that makes the spans; nil for
    ///   `InstrumentationSystem`'s, at each call.
    public init(tracer: (any Tracer)? = nil) {
        self.tracing = CallTracing(explicitTracer: tracer)
    }

    /// Runs `next` in a `.client` span, its context in the request's metadata.
    ///
    /// - Parameters:
    ///   - request: the call.
    ///   - next: the rest of the chain.
    /// - Returns: what `next` returns.
    /// - Throws: what `next` throws, after recording it on the span.
    public func intercept(
        _ request: ClientRequest,
        next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
    ) async throws(MediatorError) -> ClientResponse {
        try await intercept(request, mode: tracing.mode, next: next)
    }

    /// ``intercept(_:next:)`` with the tracing mode already looked up (the
    /// client looks it up once per call, to take its untraced path).
    func intercept(
        _ request: ClientRequest, mode: CallTracing.Mode,
        next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
    ) async throws(MediatorError) -> ClientResponse {
        switch mode {
        case .off:
            return try await next(request)
        case .instrument(let instrument):
            guard let context = ServiceContext.current else { return try await next(request) }
            var request = request
            instrument.inject(context, into: &request.metadata, using: MetadataInjector())
            return try await next(request)
        case .tracer(let tracer):
            return try await traced(tracer, request, next)
        }
    }

    private func traced<T: Tracer>(
        _ tracer: T, _ request: ClientRequest,
        _ next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
    ) async throws(MediatorError) -> ClientResponse {
        let span = tracer.startSpan("\(request.target)/\(request.action)", ofKind: .client)
        CallTracing.setRPCAttributes(span, request.target, request.action)
        defer { span.end() }
        var request = request
        tracer.inject(span.context, into: &request.metadata, using: MetadataInjector())
        do {
            return try await next(request)
        } catch {
            CallTracing.record(error, in: span)
            throw error
        }
    }
}

/// Writes what an instrument injects into a request's metadata, by
/// lowercase name (W3C names are case-insensitive); the request sends the
/// W3C keys alone.
struct MetadataInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key.lowercased()] = value
    }
}
