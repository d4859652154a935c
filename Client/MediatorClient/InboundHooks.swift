import MediatorProtocol
import NIOCore

/// A request that the daemon forwarded to this connection (to a component).
struct IncomingRequest: Sendable {
    /// The daemon's id; nil for a oneway request (nothing may be answered).
    var id: MessageID?
    var target: String
    var action: String
    var params: JSONValue
    var timeoutMs: Int64?
    var more: Bool
    /// The `caller` member's JSON text, read into a ``Caller`` only if the
    /// handler asks (most never do).
    var callerText: [UInt8]?
    /// W3C trace context, as the daemon forwarded it (nil members when absent).
    var trace = TraceMembers()
    /// The descriptors that came with the request (`fds`), in order.
    var descriptors: [OwnedFileDescriptor] = []

    init(
        id: MessageID?, target: String, action: String, params: JSONValue, timeoutMs: Int64?, more: Bool,
        callerText: [UInt8]?, descriptors: [OwnedFileDescriptor] = []
    ) {
        self.id = id
        self.target = target
        self.action = action
        self.params = params
        self.timeoutMs = timeoutMs
        self.more = more
        self.callerText = callerText
        self.descriptors = descriptors
    }
}

/// What a component's connection does with what the daemon sends it besides
/// responses and subscribed events. Called on the connection's thread: must not block.
///
/// A class: it is read for every request, and a struct of four closures
/// would be copied (four retains and releases) each time.
final class InboundHooks: Sendable {
    let request: @Sendable (IncomingRequest, Connection) -> Void
    /// A `mediator.cancel` event: the daemon gave up on its request `id`.
    let cancel: @Sendable (MessageID) -> Void
    /// The connection closed (once).
    let closed: @Sendable () -> Void
    /// A `mediator.stop` event: the daemon asks the component to leave.
    let stopRequested: @Sendable () -> Void
    /// A `mediator.reregister` event: the daemon lost the registrations of
    /// this connection; register them again on it.
    let reregisterRequested: @Sendable () -> Void

    init(
        request: @escaping @Sendable (IncomingRequest, Connection) -> Void,
        cancel: @escaping @Sendable (MessageID) -> Void,
        closed: @escaping @Sendable () -> Void,
        stopRequested: @escaping @Sendable () -> Void = {},
        reregisterRequested: @escaping @Sendable () -> Void = {}
    ) {
        self.request = request
        self.cancel = cancel
        self.closed = closed
        self.stopRequested = stopRequested
        self.reregisterRequested = reregisterRequested
    }
}
