import InMemoryTracing
import Instrumentation
import MediatorProtocol
import Tracing

/// An `InMemoryTracer` that propagates W3C `traceparent`/`tracestate`, as
/// a production tracer (swift-otel's) does; `InMemoryTracer` on its own
/// propagates keys of its own, which have no place on Mediator's wire.
/// Trace ids are 32 hex digits and span ids 16, so that they fit `traceparent`.
public struct W3CInMemoryTracer: Tracer {
    /// The spans, for inspection.
    public let recorder: InMemoryTracer
    /// Sent with every injected `traceparent`; the last one extracted is kept
    /// in the context but not checked here.
    public let tracestate: String?

    public init(tracestate: String? = "mediator-test=1") {
        recorder = InMemoryTracer(
            idGenerator: .init(nextTraceID: { Self.randomHex(bytes: 16) }, nextSpanID: { Self.randomHex(bytes: 8) }))
        self.tracestate = tracestate
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        recorder.startSpan(
            operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    public func forceFlush() { recorder.forceFlush() }

    public func inject<Carrier, Inject: Injector>(
        _ context: ServiceContext, into carrier: inout Carrier, using injector: Inject
    ) where Carrier == Inject.Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
        if let tracestate { injector.inject(tracestate, forKey: "tracestate", into: &carrier) }
    }

    public func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract
    ) where Carrier == Extract.Carrier {
        guard let traceparent = extractor.extract(key: "traceparent", from: carrier),
            TraceContext.isValidTraceparent(traceparent)
        else { return }
        let fields = traceparent.split(separator: "-")
        context.inMemorySpanContext = InMemorySpanContext(
            traceID: String(fields[1]), spanID: String(fields[2]), parentSpanID: nil)
    }

    static func randomHex(bytes: Int) -> String {
        let digits = Array("0123456789abcdef")
        var text = ""
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<(bytes * 2) { text.append(digits[Int(generator.next() % 16)]) }
        return text
    }
}

extension FinishedInMemorySpan {
    /// One JSON object: name, trace and span ids, parent span id, kind, status.
    public var jsonRecord: JSONValue {
        var record: [String: JSONValue] = [
            "name": .string(operationName), "trace_id": .string(traceID), "span_id": .string(spanID),
            "parent_span_id": parentSpanID.map(JSONValue.string) ?? .null, "kind": .string("\(kind)"),
        ]
        if let status { record["status"] = .string("\(status.code)") }
        return .object(record)
    }
}
