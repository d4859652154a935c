/// One inbound frame, classified, with its top-level members checked.
///
/// Bulky members (`params`, `result`, `error`, `data`, `caller`) are kept as
/// byte ranges into the frame: a broker forwards them as the bytes that
/// arrived and decodes them only when it must (schema checks, its own
/// actions).
public struct Envelope: Sendable, Equatable {
    /// The three kinds of message (contract section 2): a request has
    /// `target` and `action`, a response `result` or `error`, an event `event`.
    public enum Kind: Sendable, Equatable {
        /// `request`, `response` or `event`.
        case request, response, event
    }

    /// Which kind of message the frame is.
    public var kind: Kind
    /// Request: nil means oneway. Response: nil means `"id": null`.
    public var id: MessageID?
    /// The exact bytes of the `id` value, for echoing it back unchanged.
    public var idRange: Range<Int>?

    // Request members.
    /// The request's `target`; empty for other kinds.
    public var target: String = ""
    /// The request's `action`; empty for other kinds.
    public var action: String = ""
    /// The bytes of `params` in the frame; nil when absent (`{}`).
    public var paramsRange: Range<Int>?
    /// The request's `timeout_ms`; nil for the daemon's default.
    public var timeoutMs: Int64?
    /// The request's `more`: the caller accepts partial results.
    public var more: Bool = false
    /// Request or response: `fds`, how many descriptors came with the
    /// message (contract section 8); 0 when it has none. At most
    /// ``ProtocolConstants/maxFdsPerMessageLimit``, so kept in one byte
    /// (next to `more`, where the layout had room): every call builds and
    /// copies an envelope.
    public var fds: Int {
        get { Int(fdCount) }
        set { fdCount = UInt8(clamping: newValue) }
    }
    private var fdCount: UInt8 = 0
    /// The bytes of `caller` (the daemon adds it to requests for components).
    public var callerRange: Range<Int>?
    /// `remote_caller` (a request from mediatord's own NATS bridge).
    public var remoteCallerRange: Range<Int>?
    /// W3C trace context, each the whole JSON string; set only when
    /// `traceparent` is well formed (``TraceContext``), `tracestate` only with it.
    public var traceparentRange: Range<Int>? {
        traceBounds.map { Int($0.parentStart)..<Int($0.parentEnd) }
    }
    /// The bytes of `tracestate`'s string, present only with a valid `traceparent`.
    public var tracestateRange: Range<Int>? {
        guard let bounds = traceBounds, bounds.stateEnd > bounds.stateStart else { return nil }
        return Int(bounds.stateStart)..<Int(bounds.stateEnd)
    }
    /// Both ranges in 32-bit offsets: the envelope is built and copied for
    /// every call, and a request without trace context should not pay for
    /// two full ranges. An empty state range means no `tracestate`.
    struct TraceBounds: Sendable, Equatable {
        var parentStart, parentEnd, stateStart, stateEnd: UInt32
    }
    var traceBounds: TraceBounds?

    // Response members.
    /// The bytes of `result`; nil for an error response.
    public var resultRange: Range<Int>?
    /// The bytes of `error`; nil for a result.
    public var errorRange: Range<Int>?
    /// The response's `continues`: a partial result, more follow.
    public var continues: Bool = false
    /// The result or error holds a `\u` escape of a lone UTF-16 surrogate
    /// (`"\ud800"`): well-formed JSON that stands for no Unicode text, so
    /// no client can be given it. Only the broker's reading lets such a
    /// response through (a client's refuses it as malformed), so that the
    /// caller can be answered.
    public var answerHasLoneSurrogate: Bool = false

    // Event members.
    /// The event's name; empty for other kinds.
    public var event: String = ""
    /// The bytes of the event's `data`; nil when absent.
    public var dataRange: Range<Int>?

    /// An envelope of `kind` with no members yet: the parser fills it.
    public init(kind: Kind) { self.kind = kind }

    /// Whether the message is an error response.
    public var isError: Bool { errorRange != nil }
}

/// A frame that could not be read as a message, with the id when one was read.
public struct EnvelopeError: Error, Sendable, Equatable {
    /// The error to answer with (`bad_request`, `frame_too_large`).
    public var error: MediatorError
    /// The frame's id when it could be read, so the answer can carry it;
    /// nil answers with `"id": null`.
    public var id: MessageID?
    /// `error`, to be answered with `id`.
    public init(_ error: MediatorError, id: MessageID?) {
        self.error = error
        self.id = id
    }
}
