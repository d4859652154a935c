import NIOConcurrencyHelpers
import MediatorProtocol
import MediatorSocket
import Synchronization

/// What a ``Component`` handler knows about the call it serves.
public struct CallContext: Sendable {
    /// The target called: the serving component's ``Component/target``.
    public var target: String
    /// The action called. For a `notFound` handler, the action the caller
    /// asked for (not `notFound`).
    public var action: String
    /// The call's params (`{}` when absent). For a `notFound` handler, the
    /// caller's original params.
    public var params: JSONValue
    /// Who called, from the daemon's `caller` member (read from the
    /// request's bytes when first asked for).
    public var caller: Caller? {
        get {
            switch callerSource {
            case .value(let caller): return caller
            case .text(let text): return text.withUnsafeBytes { Caller(jsonBytes: $0) }
            }
        }
        set { callerSource = .value(newValue) }
    }
    /// The component's connection, for nested calls. It changes after a
    /// reconnect.
    public var client: MediatorClient
    /// The time the daemon still gives the call (`timeout_ms`), if it said.
    public var timeout: Duration?
    /// Whether the caller asked for several responses (`more`), so that
    /// ``send(partial:)`` sends anything.
    public let acceptsPartials: Bool

    /// The W3C trace context the request carries, by name: `traceparent`
    /// and `tracestate` when it has them (the only metadata the protocol
    /// carries; ``ClientRequest/metadata`` sets them). Made when read.
    public var metadata: [String: String] {
        var metadata: [String: String] = [:]
        metadata["traceparent"] = trace.traceparent
        metadata["tracestate"] = trace.tracestate
        return metadata
    }
    /// The descriptors sent with the request (`{"$fd": I}` in ``params``
    /// is `descriptors[I]`); empty unless the component accepts them
    /// (``Component/acceptsDescriptors``). Each is closed when the last
    /// reference goes: keep one beyond the call by keeping its value.
    public var descriptors: [OwnedFileDescriptor]

    /// Nil for a handler that cannot suspend (it cannot send partials).
    let responder: Responder?
    /// The request's trace members, as the daemon forwarded them.
    let trace: TraceMembers

    private enum CallerSource: Sendable {
        case value(Caller?)
        case text([UInt8])
    }

    private var callerSource: CallerSource

    init(request: IncomingRequest, client: MediatorClient, responder: Responder?) {
        self.target = request.target
        self.action = request.action
        self.params = request.params
        self.callerSource = request.callerText.map(CallerSource.text) ?? .value(nil)
        self.client = client
        self.timeout = request.timeoutMs.map { .milliseconds($0) }
        self.acceptsPartials = request.more
        self.descriptors = request.descriptors
        self.responder = responder
        self.trace = request.trace
    }

    /// Sends a non-final result (`"continues": true`). Only when the request
    /// had `"more": true` and an id, and only before the handler returns;
    /// otherwise ignored, since the contract forbids `continues` then.
    ///
    /// Waits while the socket to the daemon has more than the connection's high
    /// watermark (64 KiB) not yet taken: a stream goes at the pace the
    /// daemon reads, and the daemon ends one whose caller does not keep up
    /// (docs/daemon.md, "The outbound queue").
    public func send(partial: JSONValue) async {
        guard let responder else { return }
        await responder.waitUntilWritable()
        responder.partial(partial)
    }
}

/// Sends the responses of one incoming request, at most one final one, and
/// none once the daemon cancelled it or the component stopped.
final class Responder: Sendable {
    /// open → finished, or open → suppressed; an atomic, not a lock: one
    /// allocation fewer per call.
    private static let open: UInt8 = 0, finished: UInt8 = 1, suppressed: UInt8 = 2

    let id: MessageID?
    let more: Bool
    private let connection: Connection
    private let phase = Atomic<UInt8>(Responder.open)

    init(id: MessageID?, more: Bool, connection: Connection) {
        self.id = id
        self.more = more
        self.connection = connection
    }

    /// Nothing more may be sent (the daemon's `mediator.cancel`, or the
    /// connection is going away).
    func suppress() {
        _ = phase.compareExchange(expected: Self.open, desired: Self.suppressed, ordering: .acquiringAndReleasing)
    }

    var isSuppressed: Bool { phase.load(ordering: .acquiring) == Self.suppressed }

    func waitUntilWritable() async {
        guard more, phase.load(ordering: .acquiring) == Self.open else { return }
        await connection.waitUntilWritable()
    }

    func partial(_ value: JSONValue, descriptors: [OwnedFileDescriptor] = []) {
        guard more, let id, phase.load(ordering: .acquiring) == Self.open else { return }
        do {
            let sent = try connection.outgoing(descriptors, json: value, root: "result")
            let frame = OutboundMessage.declaringDescriptors(sent.count, in: OutboundMessage.result(id: id, value, continues: true))
            try connection.sendFrame(frame, descriptors: sent)
        } catch {
            // Too large, or descriptors that cannot go: answer the error as
            // the final response, then nothing more.
            guard error.code != .disconnected else { return }
            finish(.failure(error))
        }
    }

    func finish(_ outcome: Result<Component.Answer, MediatorError>) {
        let open = phase.compareExchange(expected: Self.open, desired: Self.finished, ordering: .acquiringAndReleasing).exchanged
        guard open else { return }
        Self.answer(id, outcome, on: connection)
    }

    /// Sends the final response to `id` (nothing for a oneway request), or
    /// `frame_too_large` in its place when it is over the daemon's limit
    /// (the daemon would drop it and the caller wait).
    static func answer(_ id: MessageID?, _ outcome: consuming Result<Component.Answer, MediatorError>, on connection: Connection) {
        guard let id else { return }
        var frame: [UInt8]
        var descriptors: [OwnedDescriptor] = []
        switch consume outcome {
        case .success(.value(let value)): frame = OutboundMessage.result(reusing: connection.frameStorage(), id: id, value)
        case .success(.convertible(let value)):
            frame = OutboundMessage.result(reusing: connection.frameStorage(), id: id) { value.encodeJSON(into: &$0) }
        case .success(.reply(let reply)):
            do {
                descriptors = try connection.outgoing(reply.descriptors, json: reply.result, root: "result")
                frame = OutboundMessage.declaringDescriptors(descriptors.count, in: OutboundMessage.result(id: id, reply.result))
            } catch {
                frame = OutboundMessage.error(id: id, error)
            }
        case .failure(let error): frame = OutboundMessage.error(id: id, error)
        }
        do {
            try connection.sendFrame(frame, descriptors: descriptors)
        } catch {
            guard error.code == .frameTooLarge else { return }
            connection.enqueue(OutboundMessage.error(id: id, error))
        }
    }
}
