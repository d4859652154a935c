/// One inbound frame, classified, with its top-level members checked.
///
/// Bulky members (`params`, `result`, `error`, `data`, `caller`) are kept as
/// byte ranges into the frame: a broker forwards them as the bytes that
/// arrived and decodes them only when it must (schema checks, its own
/// actions).
public struct Envelope: Sendable, Equatable {
    public enum Kind: Sendable, Equatable { case request, response, event }

    public var kind: Kind
    /// Request: nil means oneway. Response: nil means `"id": null`.
    public var id: MessageID?
    /// The exact bytes of the `id` value, for echoing it back unchanged.
    public var idRange: Range<Int>?

    // Request members.
    public var target: String = ""
    public var action: String = ""
    public var paramsRange: Range<Int>?
    public var timeoutMs: Int64?
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
    public var callerRange: Range<Int>?
    /// `remote_caller` (a request from mediatord's own NATS bridge).
    public var remoteCallerRange: Range<Int>?
    /// W3C trace context, each the whole JSON string; set only when
    /// `traceparent` is well formed (``TraceContext``), `tracestate` only with it.
    public var traceparentRange: Range<Int>? {
        traceBounds.map { Int($0.parentStart)..<Int($0.parentEnd) }
    }
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
    public var resultRange: Range<Int>?
    public var errorRange: Range<Int>?
    public var continues: Bool = false
    /// The result or error holds a `\u` escape of a lone UTF-16 surrogate
    /// (`"\ud800"`): well-formed JSON that stands for no Unicode text, so
    /// no client can be given it. Only the broker's reading lets such a
    /// response through (a client's refuses it as malformed), so that the
    /// caller can be answered.
    public var answerHasLoneSurrogate: Bool = false

    // Event members.
    public var event: String = ""
    public var dataRange: Range<Int>?

    public init(kind: Kind) { self.kind = kind }

    public var isError: Bool { errorRange != nil }
}

/// A frame that could not be read as a message, with the id when one was read.
public struct EnvelopeError: Error, Sendable, Equatable {
    public var error: MediatorError
    public var id: MessageID?
    public init(_ error: MediatorError, id: MessageID?) {
        self.error = error
        self.id = id
    }
}
