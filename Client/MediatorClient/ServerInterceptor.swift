import MediatorProtocol

/// Code that runs around each call a ``Component`` serves, before its
/// handler: to check who calls and refuse (auth), change the params the
/// handler gets, map the handler's errors, or time it (metrics), as
/// grpc-swift's server interceptors do.
///
/// Give the interceptors to the component (``Component/interceptors``, or
/// `Component(target:..., interceptors:)`). They run in the order given,
/// the first outermost, after the component's tracing (which is the
/// outermost of all: its span covers them, and is current while they run),
/// unless they include a ``TracingServerInterceptor`` themselves.
///
/// ```swift
/// struct OnlyRoot: ServerInterceptor {
///     func intercept(
///         _ context: CallContext,
///         next: @Sendable (CallContext) async throws -> ServerResponse
///     ) async throws -> ServerResponse {
///         guard context.caller?.uid == 0 else {
///             throw MediatorError(.forbidden, "\(context.action) is for root only")
///         }
///         return try await next(context)
///     }
/// }
/// var component = Component(target: "Admin", interceptors: [OnlyRoot()])
/// ```
///
/// An interceptor may:
/// - change the ``CallContext`` (its params, say) before passing it to `next`;
/// - throw instead of calling `next`: the caller gets the error as a
///   handler's (a `MediatorError` as it is, see ``Component`` for the
///   others), and the handler does not run;
/// - return a ``ServerResponse`` of its own;
/// - catch what `next` throws (the handler's own error, as it threw it)
///   and throw another, or look at and replace the result.
///
/// A handler's partial responses (``CallContext/send(partial:)``) go to
/// the caller as it sends them; `next` returns its final one. A call to
/// an action the component does not declare, which the daemon sends as
/// `notFound` to a component with a ``Component/handleNotFound(_:)``
/// handler, shows here as the action `notFound`, the original action and
/// params in its params.
///
/// With no interceptors and no tracing, calls take a path with none of
/// this, and a handler that does not suspend is answered without a task.
public protocol ServerInterceptor: Sendable {
    /// Runs one call: passes `context` (or a changed one) to `next`, which
    /// runs the interceptors after this one and then the handler, or
    /// answers without it.
    ///
    /// - Parameters:
    ///   - context: the call, as the interceptors before this one passed it.
    ///   - next: the rest of the chain and the handler; it may be called
    ///     several times.
    /// - Returns: the response the caller gets (as the interceptors before
    ///   this one pass it on).
    /// - Throws: what the caller gets as the error response.
    func intercept(
        _ context: CallContext,
        next: @Sendable (CallContext) async throws -> ServerResponse
    ) async throws -> ServerResponse
}

/// A handler's final response, as the ``ServerInterceptor``s see it.
public struct ServerResponse: Sendable {
    var answer: Component.Answer

    /// A response with `result`: what an interceptor returns when it
    /// answers a call itself.
    public init(result: JSONValue) {
        self.answer = .value(result)
    }

    init(_ answer: Component.Answer) {
        self.answer = answer
    }

    /// The result sent to the caller. Reading it converts a generated
    /// type's result to a `JSONValue` (once per read; nothing is converted
    /// when no interceptor reads it).
    public var result: JSONValue {
        get {
            switch answer {
            case .value(let value): return value
            case .convertible(let value): return value.jsonValue
            case .reply(let reply): return reply.result
            }
        }
        set {
            // A handler's descriptors stay with the result they came with.
            if case .reply(var reply) = answer {
                reply.result = newValue
                answer = .reply(reply)
            } else {
                answer = .value(newValue)
            }
        }
    }

    /// The descriptors sent with the result (a handler added with
    /// ``Component/addDescriptorAction(_:_:)``); empty otherwise.
    public var descriptors: [OwnedFileDescriptor] {
        if case .reply(let reply) = answer { return reply.descriptors }
        return []
    }
}

/// Runs a component's interceptors around its handler.
enum ServerInterceptorChain {
    /// Runs `context` through `interceptors` from `index` on; `handle` is the last `next`.
    static func run(
        _ interceptors: [any ServerInterceptor], from index: Int = 0, _ context: CallContext,
        handle: @Sendable (CallContext) async throws -> ServerResponse
    ) async throws -> ServerResponse {
        guard index < interceptors.count else { return try await handle(context) }
        return try await interceptors[index].intercept(context) { context in
            try await run(interceptors, from: index + 1, context, handle: handle)
        }
    }
}
