import ArgumentParser
import Instrumentation
import MediatorProtocol

/// `--traceparent` and `--tracestate` for `call` and `stream`: the call
/// continues a W3C trace started elsewhere (a shell script's, a CI job's),
/// as a library caller's would inside a span.
struct TraceOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Send this W3C traceparent with the call (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>).",
        valueName: "traceparent"))
    var traceparent: String?

    @Option(help: ArgumentHelp("Send this W3C tracestate with it (needs --traceparent).", valueName: "tracestate"))
    var tracestate: String?

    func validate() throws {
        if let traceparent, !TraceContext.isValidTraceparent(traceparent) {
            throw ValidationError("--traceparent \"\(traceparent)\" is not a W3C traceparent: 00-<32 hex>-<16 hex>-<2 hex>, ids not all zero")
        }
        if let tracestate {
            guard traceparent != nil else { throw ValidationError("--tracestate needs --traceparent") }
            guard TraceContext.isValidTracestate(tracestate) else {
                throw ValidationError("--tracestate must be at most 512 characters of printable ASCII in at most 32 members")
            }
        }
    }

    /// Runs `body` so that the library puts the given members on its calls:
    /// through the instrument it asks on every call, as any propagator would.
    func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        guard let traceparent else { return try await body() }
        InstrumentationSystem.bootstrap(GivenTraceContext(traceparent: traceparent, tracestate: tracestate))
        return try await ServiceContext.$current.withValue(.topLevel) { try await body() }
    }
}

/// An instrument that propagates one fixed trace context and extracts nothing.
struct GivenTraceContext: Instrument {
    let traceparent: String
    let tracestate: String?

    func inject<Carrier, Inject>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject: Injector, Carrier == Inject.Carrier {
        injector.inject(traceparent, forKey: "traceparent", into: &carrier)
        if let tracestate { injector.inject(tracestate, forKey: "tracestate", into: &carrier) }
    }

    func extract<Carrier, Extract>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract: Extractor, Carrier == Extract.Carrier {}
}
