import NIOConcurrencyHelpers
import Logging
import MediatorProtocol
import ServiceLifecycle
import Tracing

/// A target served by this process: its actions, their handlers, and the
/// loop that registers it with the daemon and serves its calls.
///
/// ```swift
/// var component = Component(target: "Detail", description: "shows details")
/// component.addAction("show", params: try Schema(json: ["type": "object"])) { context in
///     ["shown": true]
/// }
/// try await component.run()
/// ```
///
/// Errors: a handler that throws a `MediatorError` is answered with that
/// error's code, message and data, unchanged. Any other error is answered
/// with the code ``MediatorProtocol/ErrorCode/failed`` (`"failed"`), the message
/// `TypeName: description` and the data `{"type": "TypeName"}`, and logged
/// (`handler failed`, at `error`): `internal` is kept for bugs of the daemon
/// (contract section 7), and a handler's failure is not one. A
/// `CancellationError` the handler throws on its own becomes `cancelled`.
public struct Component: Sendable {
    /// How the target is registered (`mode` of `mediator/register`).
    public enum Mode: String, Sendable {
        /// `exclusive` (the default): one instance of the target at a time, a
        /// second registration refused with `already_registered`. `pool`:
        /// several instances with equal action specs, each call going to the
        /// one with the fewest calls in flight.
        case exclusive, pool
    }

    /// Where handlers run.
    public enum HandlerExecutor: Sendable {
        /// On the thread that does the connection's I/O (the default), as
        /// sd-bus and GDBus run method handlers: a call is read, handled
        /// and answered with no thread hand-off. Handlers take turns on
        /// that thread between their `await`s, so one that blocks or
        /// computes for long delays every other call of this component
        /// (and its cancellations): move such work elsewhere, or choose
        /// ``concurrent``.
        case connection
        /// On Swift's global concurrent executor: handlers run in parallel
        /// on every core, at the cost of two thread hand-offs per call
        /// (about 10 µs of latency each way on a small VM).
        case concurrent
    }

    /// What a handler answered: a value, or one that writes its own JSON
    /// text (generated types: no JSONValue is built for their results).
    @usableFromInline enum Answer: Sendable {
        case value(JSONValue)
        case convertible(any JSONValueConvertible)
        /// A result with descriptors (Component+Descriptors.swift).
        case reply(MediatorReply)
    }

    @usableFromInline typealias Handler = @Sendable (CallContext) async throws -> Answer
    /// A handler that cannot suspend: with ``HandlerExecutor/connection``
    /// it runs at once where the call is read, without a task.
    @usableFromInline typealias ImmediateHandler = @Sendable (CallContext) throws -> Answer

    @usableFromInline enum ActionHandler: Sendable {
        case async(Handler)
        case immediate(ImmediateHandler)
    }
    typealias NotFoundHandler = @Sendable (String, JSONValue, CallContext) async throws -> JSONValue

    /// The target's name, registered as given (contract section 3's name
    /// rules; the daemon refuses others with `bad_request`).
    public let target: String
    /// The target's description, shown by `mediatorctl list` and `describe`.
    public let description: String?
    /// Exclusive (the default) or one instance of a pool.
    public let mode: Mode
    /// Runs each handler in a `.server` span, the child of the caller's
    /// span when the request carries `traceparent`, and traces the
    /// handler's own calls; nil uses `InstrumentationSystem`'s
    /// (docs/tracing.md).
    public var tracer: (any Tracer)?
    /// Run around each call, before its handler, in this order, the first
    /// outermost (<doc:InterceptingCalls>); the tracing (``tracer``) is one
    /// more, outermost, unless they include a ``TracingServerInterceptor``.
    /// None by default.
    public var interceptors: [any ServerInterceptor] {
        didSet { placesTracing = Self.placesTracing(interceptors) }
    }
    /// Whether ``interceptors`` has its own tracing: then the component adds none.
    private(set) var placesTracing: Bool
    /// Where handlers run.
    public var handlerExecutor: HandlerExecutor
    /// Where the component logs (with `target` added): reconnections, and a
    /// handler's error that is not a `MediatorError`. The library's
    /// `mediator.client` logger unless set.
    public var logger = MediatorClient.logger
    /// Registers this component as a stand-in for the target served on
    /// another host (`"remote": {"host": ...}` in `register`, docs/protocol.md):
    /// it gets calls only when no local instance is registered. The daemon
    /// accepts it from its own NATS bridge only.
    @_spi(NATSBridge) public var remoteHost: String?

    // Where and how ``run()`` runs it, as a ServiceLifecycle `Service`.

    /// The daemon's socket; nil for the default (`MEDIATOR_SOCKET`, else the
    /// system instance's socket).
    public var socketPath: String?
    /// The name sent in `hello`, which components see as `caller.name`.
    public var connectionName: String?
    /// Called after each registration (the first, and each one after a reconnect).
    public var onRegistered: (@Sendable () async -> Void)?
    /// On graceful shutdown, how long the calls in flight may take to
    /// finish once the target is unregistered; the handlers still running
    /// after it are cancelled.
    public var shutdownGracePeriod: Duration = .seconds(10)
    /// Says `"fds": true` in `hello`: handlers receive the descriptors sent
    /// with a request (``CallContext/descriptors``) and may answer with
    /// some (``MediatorReply``). Without it, a request with descriptors is
    /// refused with `fds_not_supported` before it reaches a handler.
    public var acceptsDescriptors = false

    /// In the order declared; a later declaration of a name replaces the earlier one.
    private var specs: [ActionSpec] = []
    private var handlers: [String: ActionHandler] = [:]
    private var notFoundHandler: NotFoundHandler?

    /// A component with no actions yet: declare them with the `addAction`
    /// methods, then ``run()``.
    ///
    /// - Parameters:
    ///   - target: the target's name.
    ///   - description: the target's description; nil for none.
    ///   - mode: ``Mode/exclusive`` unless several processes serve the target.
    ///   - tracer: see ``tracer``; nil uses `InstrumentationSystem`'s.
    ///   - handlerExecutor: where the handlers run; see ``HandlerExecutor``.
    ///   - interceptors: see ``interceptors``.
    public init(
        target: String, description: String? = nil, mode: Mode = .exclusive, tracer: (any Tracer)? = nil,
        handlerExecutor: HandlerExecutor = .connection, interceptors: [any ServerInterceptor] = []
    ) {
        self.target = target
        self.description = description
        self.mode = mode
        self.tracer = tracer
        self.handlerExecutor = handlerExecutor
        self.interceptors = interceptors
        self.placesTracing = Self.placesTracing(interceptors)
    }

    private static func placesTracing(_ interceptors: [any ServerInterceptor]) -> Bool {
        interceptors.contains { $0 is TracingServerInterceptor }
    }

    /// The ActionSpecs sent in `register`.
    public var actionSpecs: [ActionSpec] { specs }

    /// Declares an action. `params`, when given, is checked by the daemon
    /// before the call reaches the handler; `url: false` keeps the action out
    /// of `mediator/open`.
    ///
    /// - Parameters:
    ///   - name: the action's name (contract section 3's name rules); a
    ///     second declaration of a name replaces the first.
    ///   - description: for people: `mediatorctl describe` and generated code.
    ///   - params: the schema of its params; the daemon answers a call that
    ///     does not match with `invalid_params`.
    ///   - result: the schema of its results; the daemon answers a result
    ///     that does not match with `invalid_result`.
    ///   - url: `false` keeps it out of `mediator/open`; nil or `true` lets
    ///     a URL reach it.
    ///   - handler: answers one call with its result. A `MediatorError` it
    ///     throws is answered as it is; any other error as `failed`.
    public mutating func addAction(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (CallContext) async throws -> JSONValue
    ) {
        declare(
            ActionSpec(name: name, description: description, params: params, result: result, url: url),
            .async({ .value(try await handler($0)) }))
    }

    /// Declares an action whose handler does not suspend (no `await`): the
    /// closure form Swift picks for a closure without `await`. With
    /// ``HandlerExecutor/connection`` and no tracing bootstrapped it runs
    /// where the call is read, on the connection's thread, with no task made
    /// for it: the fastest way to answer. Otherwise as the `async` form.
    public mutating func addAction(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (CallContext) throws -> JSONValue
    ) {
        declare(
            ActionSpec(name: name, description: description, params: params, result: result, url: url),
            .immediate({ .value(try handler($0)) }))
    }

    /// Declares an action with `Decodable` params and an `Encodable` result
    /// (Foundation's JSON coders). Params that do not decode are answered
    /// with `invalid_params`.
    public mutating func addAction<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (P, CallContext) async throws -> R
    ) {
        declareDecoding(ActionSpec(name: name, description: description, params: params, result: result, url: url), handler)
    }

    /// Declares an action with `Decodable` params and an `Encodable` result
    /// whose handler does not suspend (see the untyped form).
    public mutating func addAction<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (P, CallContext) throws -> R
    ) {
        declareDecoding(ActionSpec(name: name, description: description, params: params, result: result, url: url), handler)
    }

    /// Declares an action whose params and result convert to and from
    /// `JSONValue` directly (``JSONValueConvertible``, as generated
    /// interface types do): as the `Codable` form, without Foundation's coders.
    /// Inlinable, as the converting forms below: specialized in the caller's
    /// module, each call converts without a trip through witness tables.
    @inlinable
    public mutating func addAction<P: JSONValueConvertible, R: JSONValueConvertible>(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (P, CallContext) async throws -> R
    ) {
        declareConverting(ActionSpec(name: name, description: description, params: params, result: result, url: url), handler)
    }

    /// The same for a handler that does not suspend.
    @inlinable
    public mutating func addAction<P: JSONValueConvertible, R: JSONValueConvertible>(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (P, CallContext) throws -> R
    ) {
        declareConverting(ActionSpec(name: name, description: description, params: params, result: result, url: url), handler)
    }

    /// Declares `spec` exactly as given, with a handler that decodes its
    /// params and encodes its result.
    mutating func declareDecoding<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (P, CallContext) async throws -> R
    ) {
        declare(spec, .async({ context in
            let value = try await handler(try Self.decodeParams(P.self, context), context)
            return .value(try Self.encodeResult(value))
        }))
    }

    /// ``declareDecoding(_:_:)`` for a handler that does not suspend.
    mutating func declareDecoding<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (P, CallContext) throws -> R
    ) {
        declare(spec, .immediate({ context in
            .value(try Self.encodeResult(try handler(try Self.decodeParams(P.self, context), context)))
        }))
    }

    /// ``declareDecoding(_:_:)`` for types that convert to and from
    /// `JSONValue` directly (generated interfaces): no Foundation coders.
    @inlinable
    mutating func declareConverting<P: JSONValueConvertible, R: JSONValueConvertible>(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (P, CallContext) async throws -> R
    ) {
        declare(spec, .async({ context in
            .convertible(try await handler(try Self.convertParams(P.self, context), context))
        }))
    }

    @inlinable
    mutating func declareConverting<P: JSONValueConvertible, R: JSONValueConvertible>(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (P, CallContext) throws -> R
    ) {
        declare(spec, .immediate({ context in
            .convertible(try handler(try Self.convertParams(P.self, context), context))
        }))
    }

    @inlinable
    static func convertParams<P: JSONValueConvertible>(_ type: P.Type, _ context: CallContext) throws(MediatorError) -> P {
        do {
            return try P(jsonValue: context.params)
        } catch {
            throw MediatorError(.invalidParams, "params do not decode as \(P.self): \(error)")
        }
    }

    private static func decodeParams<P: Decodable>(_ type: P.Type, _ context: CallContext) throws(MediatorError) -> P {
        do {
            return try JSONBridge.decode(P.self, from: context.params)
        } catch {
            throw MediatorError(.invalidParams, "params do not decode as \(P.self): \(error)")
        }
    }

    private static func encodeResult(_ value: some Encodable) throws(MediatorError) -> JSONValue {
        do {
            return try JSONBridge.value(from: value)
        } catch {
            throw MediatorError(.failed, "the result does not encode as JSON: \(error)")
        }
    }

    /// Declares the action `notFound` (contract section 4, rule 3): the
    /// daemon sends it every call to an action the component does not
    /// declare. The handler gets the action asked for and its params; so
    /// does its context's `action` and `params`.
    public mutating func handleNotFound(
        _ handler: @escaping @Sendable (_ action: String, _ params: JSONValue, CallContext) async throws -> JSONValue
    ) {
        specs.removeAll { $0.name == "notFound" }
        specs.append(ActionSpec(name: "notFound"))
        handlers["notFound"] = nil
        notFoundHandler = handler
    }

    @usableFromInline
    mutating func declare(_ spec: ActionSpec, _ handler: ActionHandler) {
        specs.removeAll { $0.name == spec.name }
        specs.append(spec)
        handlers[spec.name] = handler
        if spec.name == "notFound" { notFoundHandler = nil }
    }

    /// The params of `mediator/register`.
    var registerParams: JSONValue {
        var params: [String: JSONValue] = [
            "target": .string(target),
            "actions": .array(specs.map(\.json)),
            "mode": .string(mode.rawValue),
        ]
        if let description { params["description"] = .string(description) }
        if let remoteHost { params["remote"] = ["host": .string(remoteHost)] }
        return .object(params)
    }

    /// Runs the handler for one call.
    func handle(_ context: CallContext) async throws -> Answer {
        var context = context
        if context.action == "notFound", let notFoundHandler {
            // The members come from the wire: a daemon that forwards a bad
            // name, or any peer on its behalf, must not reach the handler
            // (`serve --exec` passes the action as argv).
            let action = try Self.validatedActionName(context.params["action"], member: "params.action")
            let params = context.params["params"] ?? .object([:])
            guard params.objectValue != nil else {
                throw MediatorError(.invalidParams, "params.params: expected an object, got \(Self.sample(params))")
            }
            context.action = action
            context.params = params
            return .value(try await notFoundHandler(action, params, context))
        }
        switch handlers[context.action] {
        case .async(let handler)?: return try await handler(context)
        case .immediate(let handler)?: return try handler(context)
        case nil: break
        }
        if let notFoundHandler {
            return .value(try await notFoundHandler(context.action, context.params, context))
        }
        throw MediatorError(.actionNotFound, "\"\(target)\" does not declare the action \"\(context.action)\"")
    }

    /// The handler for `action` when it is one that does not suspend and
    /// would be the one to run (not a `notFound` call to the component's
    /// notFound handler).
    func immediateHandler(for action: String) -> ImmediateHandler? {
        if action == "notFound", notFoundHandler != nil { return nil }
        guard case .immediate(let handler)? = handlers[action] else { return nil }
        return handler
    }
}
