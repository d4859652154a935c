import Instrumentation
import MediatorProtocol
import Tracing

/// The component's tracing, as a ``ServerInterceptor``: each call a
/// `.server` span named `TARGET/ACTION`, the child of the span the
/// request's `traceparent` names (a new trace when it names none), current
/// while the rest of the chain and the handler run, so that the handler's
/// own calls are its children (docs/tracing.md). A failed call records its
/// error on the span.
///
/// Every ``Component`` runs one, outermost (before the interceptors you
/// give), so that its span covers everything the component does for the
/// call: the one it makes from ``Component/tracer``. Put one in
/// ``Component/interceptors`` yourself to run it elsewhere in the chain;
/// the component then adds none of its own.
///
/// With no tracer given, it uses `InstrumentationSystem`'s, looked up at
/// each call: nothing bootstrapped, it does nothing; an instrument that
/// does not trace, it makes the caller's context current without spans.
public struct TracingServerInterceptor: ServerInterceptor {
    let tracing: CallTracing

    /// - Parameter tracer: the tracer that makes the spans; nil for
    ///   `InstrumentationSystem`'s, at each call.
    public init(tracer: (any Tracer)? = nil) {
        self.tracing = CallTracing(explicitTracer: tracer)
    }

    /// Runs `next` in a `.server` span that continues the caller's trace.
    ///
    /// - Parameters:
    ///   - context: the call.
    ///   - next: the rest of the chain and the handler.
    /// - Returns: what `next` returns.
    /// - Throws: what `next` throws, after recording it on the span.
    public func intercept(
        _ context: CallContext,
        next: @Sendable (CallContext) async throws -> ServerResponse
    ) async throws -> ServerResponse {
        try await Self.intercept(context, mode: tracing.mode, next: next)
    }

    /// ``intercept(_:next:)`` with the tracing mode already looked up (the
    /// component looks it up once per call, to take its untraced path).
    static func intercept(
        _ context: CallContext, mode: CallTracing.Mode,
        next: @Sendable (CallContext) async throws -> ServerResponse
    ) async throws -> ServerResponse {
        switch mode {
        case .off:
            return try await next(context)
        case .instrument(let instrument):
            // No spans, but the caller's context reaches the handler's own calls.
            var traceContext = ServiceContext.current ?? .topLevel
            if context.trace.traceparent != nil {
                instrument.extract(context.trace, into: &traceContext, using: TraceMembersExtractor())
            }
            return try await ServiceContext.$current.withValue(traceContext) { try await next(context) }
        case .tracer(let tracer):
            return try await traced(tracer, context, next)
        }
    }

    private static func traced<T: Tracer>(
        _ tracer: T, _ context: CallContext, _ next: @Sendable (CallContext) async throws -> ServerResponse
    ) async throws -> ServerResponse {
        var parent = ServiceContext.current ?? .topLevel
        if context.trace.traceparent != nil {
            tracer.extract(context.trace, into: &parent, using: TraceMembersExtractor())
        }
        // The body does not throw: `withSpan` would record the error a
        // second time, as it was thrown rather than as it is answered.
        let outcome = await tracer.withSpan("\(context.target)/\(context.action)", context: parent, ofKind: .server) {
            span -> Result<ServerResponse, any Error> in
            CallTracing.setRPCAttributes(span, context.target, context.action)
            do {
                return .success(try await next(context))
            } catch {
                CallTracing.record(ComponentServer.mediatorError(error).error, in: span)
                return .failure(error)
            }
        }
        return try outcome.get()
    }
}
