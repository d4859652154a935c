import MediatorProtocol

/// Code that runs around each call a ``MediatorClient`` makes: to add to
/// or change the request, answer it without the daemon, retry it, or
/// observe its outcome and duration (tracing, metrics, auth tokens,
/// retries), as grpc-swift's client interceptors do.
///
/// Give the interceptors to ``MediatorClient/connect(socketPath:name:maxFrameBytes:fds:tracer:logger:interceptors:)``
/// (or ``withMediatorClient(socketPath:name:maxFrameBytes:fds:tracer:logger:interceptors:_:)``,
/// ``MediatorSession``). They run in the order given, the first outermost:
/// the first sees the request as the caller made it and the outcome as
/// the caller gets it. Each `call`, `send` and `stream` of the client goes
/// through them, the daemon's own actions that you call (`list`,
/// `publish`...) too; what the library sends by itself (`hello`,
/// `register`, `mediator/cancel`, subscriptions) does not.
///
/// ```swift
/// struct RetryUnavailable: ClientInterceptor {
///     func intercept(
///         _ request: ClientRequest,
///         next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
///     ) async throws(MediatorError) -> ClientResponse {
///         do throws(MediatorError) {
///             return try await next(request)
///         } catch {
///             guard error.code == .componentUnavailable else { throw error }
///             return try await next(request)
///         }
///     }
/// }
/// let client = try await MediatorClient.connect(interceptors: [RetryUnavailable()])
/// ```
///
/// An interceptor may:
/// - change ``ClientRequest/params``, ``ClientRequest/timeout``, the target
///   or action, or ``ClientRequest/metadata``, before passing the request to `next`;
/// - return a ``ClientResponse`` of its own without calling `next` (no
///   request is sent), or throw a `MediatorError`;
/// - call `next` more than once (a retry: each call sends a request again;
///   mind `delivered` on the error, which says whether the component may
///   have run it already);
/// - look at or replace the result, catch and map the error, and time the call.
///
/// A stream (``ClientRequest/Kind/stream``) passes its partial responses
/// straight to the caller as they come; `next` returns the final response,
/// once the stream has ended. A retried stream may so have delivered the
/// partials of the first attempt already.
///
/// With no interceptors and no tracing, calls take a path with none of
/// this (no request value is built).
public protocol ClientInterceptor: Sendable {
    /// Runs one call: passes `request` (or another) to `next`, which runs
    /// the interceptors after this one and then sends it, or answers
    /// without it.
    ///
    /// - Parameters:
    ///   - request: the call as the interceptors before this one passed it.
    ///   - next: the rest of the chain; it may be called several times.
    /// - Returns: the response the caller gets (as the interceptors before
    ///   this one pass it on).
    /// - Throws: the `MediatorError` the caller gets.
    func intercept(
        _ request: ClientRequest,
        next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
    ) async throws(MediatorError) -> ClientResponse
}

/// One outgoing call, as the ``ClientInterceptor``s see it.
public struct ClientRequest: Sendable {
    /// How the call is made, which decides what comes back.
    public enum Kind: Sendable, Hashable {
        /// ``MediatorClient/call(target:action:params:timeout:)`` and the
        /// typed calls: one response.
        case call
        /// ``MediatorClient/send(target:action:params:)-(_,_,JSONValue)``: no
        /// id, no response; the response is `null` once the request is queued.
        case oneway
        /// ``MediatorClient/stream(target:action:params:timeout:)``: partial
        /// responses go straight to the caller; the response is the final one.
        case stream
    }

    /// The params as the caller gave them: a value, or (the typed and
    /// generated calls) their JSON text, parsed only if an interceptor asks.
    enum Params: Sendable {
        case value(JSONValue)
        case encoded([UInt8])
    }

    /// Call, oneway send or stream.
    public let kind: Kind
    /// The target called.
    public var target: String
    /// The action called.
    public var action: String
    /// Sent as `timeout_ms`; nil for the daemon's default (30 s).
    public var timeout: Duration?
    /// Values for the interceptors of this call, by name (lowercase). Only
    /// the W3C trace context keys `traceparent` and `tracestate` are sent
    /// (the protocol carries no other metadata; a component reads them as
    /// ``CallContext/metadata``), and only when well formed; the others
    /// stay in this process, for the interceptors after the one that sets
    /// them. To send a value to the component, put it in ``params``.
    public var metadata: [String: String]
    /// The descriptors sent with the request (`{"$fd": I}` in ``params``),
    /// for a call made with
    /// ``MediatorClient/call(target:action:params:descriptors:timeout:)``;
    /// empty otherwise.
    public var descriptors: [OwnedFileDescriptor] = []
    /// Whether the caller takes descriptors with the answer (a call made
    /// with descriptors, or ready to receive some).
    var passesDescriptors = false

    var encodedParams: Params

    /// The request's `params`, a JSON object. Reading it parses the JSON
    /// text of a typed call's params (once per read; nothing is parsed
    /// when no interceptor reads it).
    public var params: JSONValue {
        get {
            switch encodedParams {
            case .value(let value): return value
            // The text is an object's, written by JSONEncoder or a
            // generated type; text that is not JSON is refused as
            // `invalid_params` when sent, and reads as null here.
            case .encoded(let text): return (try? JSONParser.parse(text)) ?? .null
            }
        }
        set { encodedParams = .value(newValue) }
    }

    /// A request, for testing an interceptor on its own; the client makes
    /// those it passes to its interceptors.
    ///
    /// - Parameters:
    ///   - kind: call, oneway send or stream.
    ///   - target: the target called.
    ///   - action: the action called.
    ///   - params: the params, a JSON object.
    ///   - timeout: nil for the daemon's default.
    ///   - metadata: see ``metadata``.
    public init(
        kind: Kind, target: String, action: String, params: JSONValue = .object([:]), timeout: Duration? = nil,
        metadata: [String: String] = [:]
    ) {
        self.init(kind: kind, target: target, action: action, params: .value(params), timeout: timeout, metadata: metadata)
    }

    init(kind: Kind, target: String, action: String, params: Params, timeout: Duration?, metadata: [String: String] = [:]) {
        self.kind = kind
        self.target = target
        self.action = action
        self.encodedParams = params
        self.timeout = timeout
        self.metadata = metadata
    }

    /// The trace context members to send: the metadata's W3C keys, when well formed.
    var trace: TraceMembers? {
        guard !metadata.isEmpty else { return nil }
        return TraceMembers(traceparent: metadata["traceparent"], tracestate: metadata["tracestate"]).checked
    }
}

/// The outcome of one call, as the ``ClientInterceptor``s see it.
public struct ClientResponse: Sendable {
    enum Result: Sendable {
        case value(JSONValue)
        /// A typed call's result, as JSON text from the wire.
        case encoded([UInt8])
    }

    var encodedResult: Result
    /// The descriptors that came with the answer, for a call that passes
    /// descriptors (``ClientRequest/descriptors``); empty otherwise.
    public var descriptors: [OwnedFileDescriptor] = []

    /// The call's result; the final response of a stream; `null` for a
    /// oneway request. Reading it parses the JSON text a typed call
    /// received (once per read).
    public var result: JSONValue {
        get {
            switch encodedResult {
            case .value(let value): return value
            // The text is a result's as the frame parser accepted it.
            case .encoded(let text): return (try? JSONParser.parse(text)) ?? .null
            }
        }
        set { encodedResult = .value(newValue) }
    }

    /// A response with `result`: what an interceptor returns when it
    /// answers a call itself.
    public init(result: JSONValue, descriptors: [OwnedFileDescriptor] = []) {
        self.encodedResult = .value(result)
        self.descriptors = descriptors
    }

    init(encoded text: [UInt8]) {
        self.encodedResult = .encoded(text)
    }

    /// The result as JSON text (what the typed calls decode).
    var resultText: [UInt8] {
        switch encodedResult {
        case .value(let value): return value.encoded
        case .encoded(let text): return text
        }
    }
}
