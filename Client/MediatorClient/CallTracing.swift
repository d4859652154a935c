import Instrumentation
import MediatorProtocol
import Tracing

/// The W3C trace context members of one request (docs/protocol.md):
/// what an instrument injects into an outgoing call, and what a component
/// extracts from an incoming one.
struct TraceMembers: Sendable, Equatable {
    var traceparent: String?
    var tracestate: String?

    /// What may go on the wire: a well-formed `traceparent`, and
    /// `tracestate` only with it (the daemon would drop anything else).
    var checked: TraceMembers? {
        guard let traceparent, TraceContext.isValidTraceparent(traceparent) else { return nil }
        return TraceMembers(traceparent: traceparent, tracestate: tracestate.flatMap { TraceContext.isValidTracestate($0) ? $0 : nil })
    }
}

/// Reads the W3C keys from an incoming request's members.
struct TraceMembersExtractor: Extractor {
    func extract(key: String, from carrier: TraceMembers) -> String? {
        switch key.lowercased() {
        case "traceparent": return carrier.traceparent
        case "tracestate": return carrier.tracestate
        default: return nil
        }
    }
}

/// Which tracing a client or component does, decided per call so that a
/// bootstrap after connecting still counts. ``TracingClientInterceptor``
/// and ``TracingServerInterceptor`` act on it; the client and the
/// component read it first to take their untraced path.
struct CallTracing: Sendable {
    enum Mode: Sendable {
        /// Nothing bootstrapped and no tracer given: no spans, no members.
        case off
        /// An instrument that propagates but does not trace: the current
        /// context is passed on, no spans are made.
        case instrument(any Instrument)
        case tracer(any Tracer)
    }

    /// Given to `connect` or `Component`; nil: `InstrumentationSystem`'s.
    let explicitTracer: (any Tracer)?

    var mode: Mode {
        // Compared with nil first: binding the optional would copy the
        // existential (and destroy the copy) on every call, tracer or not.
        guard explicitTracer == nil else { return explicitTracer.map(Mode.tracer) ?? .off }
        // The default case costs a task-local read and a read lock. The
        // types are compared rather than cast (`is`): both are structs, and
        // a cast is a trip through the runtime on every call.
        let instrument = InstrumentationSystem.instrument
        if type(of: instrument) == NoOpInstrument.self { return .off }
        let tracer = InstrumentationSystem.tracer
        if type(of: tracer) == NoOpTracer.self { return .instrument(instrument) }
        return .tracer(tracer)
    }

    /// OpenTelemetry's RPC conventions: the system, service and method.
    static func setRPCAttributes(_ span: some Span, _ target: String, _ action: String) {
        span.attributes["rpc.system"] = "mediator"
        span.attributes["rpc.service"] = target
        span.attributes["rpc.method"] = action
    }

    static func record(_ error: MediatorError, in span: some Span) {
        span.recordError(error)
        span.attributes["mediator.error_code"] = error.code.rawValue
        span.setStatus(SpanStatus(code: .error, message: error.code.rawValue))
    }
}
