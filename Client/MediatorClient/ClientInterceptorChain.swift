import MediatorProtocol
import Tracing

/// A client's interceptors in the order they run: the ones given to
/// `connect`, then the client's own tracing, innermost, unless the given
/// ones place a ``TracingClientInterceptor`` themselves.
struct ClientInterceptorChain: Sendable {
    /// The interceptors given, first outermost.
    let interceptors: [any ClientInterceptor]
    /// The client's tracing; nil when `interceptors` has its own.
    let tracing: TracingClientInterceptor?

    init(_ interceptors: [any ClientInterceptor], tracer: (any Tracer)?) {
        self.interceptors = interceptors
        self.tracing = interceptors.contains { $0 is TracingClientInterceptor } ? nil : TracingClientInterceptor(tracer: tracer)
    }

    /// Runs `request` through the chain from `index` on; `send` is the last `next`.
    /// `mode` is the client's tracing, as the caller looked it up.
    func run(
        _ request: ClientRequest, from index: Int = 0, mode: CallTracing.Mode,
        send: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
    ) async throws(MediatorError) -> ClientResponse {
        guard index < interceptors.count else {
            guard let tracing else { return try await send(request) }
            return try await tracing.intercept(request, mode: mode, next: send)
        }
        return try await interceptors[index].intercept(request) { (request) async throws(MediatorError) in
            try await run(request, from: index + 1, mode: mode, send: send)
        }
    }
}
