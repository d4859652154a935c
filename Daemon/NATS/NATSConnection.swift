import CNats
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// What happens to a ``NATSConnection`` after it is made.
package enum NATSConnectionEvent: Sendable, Equatable {
    /// Connected for the first time (only when the first connect was left
    /// to retry in the background, ``NATSOptions/retryFirstConnect``).
    case connected
    case disconnected
    /// Connected again; libnats has sent the subscriptions again.
    case reconnected
    /// For good: after ``NATSConnection/close()``, or when reconnecting gave up.
    case closed
    /// An asynchronous error: a slow consumer (messages dropped), a
    /// publish or subscribe the server's permissions refused. The
    /// connection goes on.
    case error(NATSError)
}

/// One connection to NATS through libnats, the official C client.
///
/// Threads: libnats calls the `events` closure and every subscription's
/// handler on threads of its own. Both must return quickly, never block
/// and not call back into this connection synchronously: the owner hands
/// the value over to its own event loop (e.g. `eventLoop.execute`) and
/// does the work there. Messages are copied out of libnats (and its
/// `natsMsg` destroyed) before a handler sees them. ``connect(_:events:)``
/// and ``close()`` block, so they are called off any event loop.
///
/// Ownership: the C objects are freed exactly once, when this object goes
/// (after ``close()``, which `deinit` calls too). The `events` closure lives
/// until libnats's closed callback, its last; a subscription's handler
/// until libnats says that no callback of it can run any more.
package final class NATSConnection: @unchecked Sendable {
    // @unchecked: the C connection is thread-safe (libnats locks inside),
    // and the Swift state is immutable.
    private let connection: OpaquePointer
    private let options: OpaquePointer

    /// The `events` closure, in a class so that C callbacks can reach it.
    final class EventBox: @unchecked Sendable {
        let handler: @Sendable (NATSConnectionEvent) -> Void
        init(_ handler: @escaping @Sendable (NATSConnectionEvent) -> Void) { self.handler = handler }
    }

    private init(connection: OpaquePointer, options: OpaquePointer) {
        self.connection = connection
        self.options = options
    }

    deinit {
        // The events box is released by the closed callback, which libnats
        // runs (on its own thread) after this close, possibly after deinit.
        libnats.natsConnection_Close(connection)
        libnats.natsConnection_Destroy(connection)
        libnats.natsOptions_Destroy(options)
    }

    /// Connects. With ``NATSOptions/retryFirstConnect`` a server that is not
    /// up yet is not an error: libnats keeps trying, and `events` gets
    /// ``NATSConnectionEvent/connected`` when it succeeds. Blocks for up to
    /// the options' timeout: call it off any event loop.
    package static func connect(
        _ settings: NATSOptions, events: @escaping @Sendable (NATSConnectionEvent) -> Void
    ) throws(NATSError) -> NATSConnection {
        let options = try settings.makeNativeOptions()
        let box = Unmanaged.passRetained(EventBox(events))
        let context = box.toOpaque()
        do {
            try check(libnats.natsOptions_SetDisconnectedCB(options, { _, context in
                EventBox.deliver(.disconnected, context)
            }, context), "NATS disconnected callback")
            try check(libnats.natsOptions_SetReconnectedCB(options, { _, context in
                EventBox.deliver(.reconnected, context)
            }, context), "NATS reconnected callback")
            try check(libnats.natsOptions_SetClosedCB(options, { _, context in
                // The last callback libnats makes for a connection: the box goes with it.
                EventBox.deliver(.closed, context)
                if let context { Unmanaged<EventBox>.fromOpaque(context).release() }
            }, context), "NATS closed callback")
            try check(libnats.natsOptions_SetErrorHandler(options, { connection, subscription, status, context in
                EventBox.deliver(.error(NATSError(asynchronous: status, connection, subscription)), context)
            }, context), "NATS error callback")
            if settings.retryFirstConnect {
                try check(libnats.natsOptions_SetRetryOnFailedConnect(options, true, { _, context in
                    EventBox.deliver(.connected, context)
                }, context), "NATS connect retry")
            }
        } catch {
            libnats.natsOptions_Destroy(options)
            box.release()
            throw error
        }
        var made: OpaquePointer?
        let status = libnats.natsConnection_Connect(&made, options)
        // NATS_NOT_YET_CONNECTED: retrying in the background, as asked.
        guard status == NATS_OK || (status == NATS_NOT_YET_CONNECTED && settings.retryFirstConnect), let made else {
            let error = NATSError(status, "connect to \(settings.servers.joined(separator: ", "))")
            if let made { libnats.natsConnection_Destroy(made) }
            libnats.natsOptions_Destroy(options)
            box.release()
            throw error
        }
        return NATSConnection(connection: made, options: options)
    }

    // MARK: - State

    package var isConnected: Bool { Int(libnats.natsConnection_Status(connection).rawValue) == Int(mediator_nats_status_connected()) }

    package var isClosed: Bool { libnats.natsConnection_IsClosed(connection) }

    /// The most bytes the server takes in one message (its `max_payload`,
    /// 1 MiB by default); 0 while not connected.
    package var maxPayload: Int { Int(libnats.natsConnection_GetMaxPayload(connection)) }

    /// The URL of the server in use, if connected.
    package var connectedURL: String? {
        var buffer = [CChar](repeating: 0, count: 512)
        guard libnats.natsConnection_GetConnectedUrl(connection, &buffer, buffer.count) == NATS_OK, buffer[0] != 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Closes the connection: no more messages or events but ``NATSConnectionEvent/closed``.
    /// Idempotent. Blocks: libnats flushes what is buffered (up to 0.5 s)
    /// and joins its threads, so call it off any event loop (and `deinit`,
    /// which calls it, runs wherever the last reference goes).
    package func close() {
        libnats.natsConnection_Close(connection)
    }

    // MARK: - Sending

    /// Publishes `payload` on `subject`, with a reply subject and headers if
    /// given. Returns once libnats has it buffered (it is sent by libnats's
    /// flusher, or buffered while reconnecting).
    package func publish(
        _ subject: String, reply: String? = nil, headers: [String: [String]] = [:], payload: [UInt8]
    ) throws(NATSError) {
        // libnats takes the length as an int (and servers refuse far less: 1 MiB by default).
        guard let length = Int32(exactly: payload.count) else {
            throw .invalid("a payload of \(payload.count) bytes is too large", "publish on \(subject)")
        }
        var created: OpaquePointer?
        let status = payload.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                libnats.natsMsg_Create(&created, subject, reply, $0.baseAddress, length)
            }
        }
        try check(status, "NATS message for \(subject)")
        guard let message = created else { throw .invalid("natsMsg_Create returned nothing", "publish \(subject)") }
        defer { libnats.natsMsg_Destroy(message) }
        for (name, values) in headers {
            for value in values { try check(libnats.natsMsgHeader_Add(message, name, value), "NATS header \(name)") }
        }
        try check(libnats.natsConnection_PublishMsg(connection, message), "publish on \(subject)")
    }

    /// Sends everything buffered and waits for the server's answer.
    package func flush(timeout: Duration = .seconds(2)) throws(NATSError) {
        try check(libnats.natsConnection_FlushTimeout(connection, NATSOptions.milliseconds(timeout)), "flush")
    }

    /// A new, unique inbox subject (`_INBOX.` and a random token).
    package static func newInbox() -> String {
        var inbox: UnsafeMutablePointer<CChar>?
        // Without libnats (not loaded yet, or not installed), or out of memory: a random name does the same job.
        guard let nats = LibNATS.ifLoaded?.pointee, nats.natsInbox_Create(&inbox) == NATS_OK, let inbox else {
            return "_INBOX." + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        }
        defer { nats.natsInbox_Destroy(inbox) }
        return String(cString: inbox)
    }

    // MARK: - Receiving

    /// Subscribes to `subject` (wildcards allowed), in queue group `queue`
    /// when given: each message then goes to one member of the group.
    /// `handler` runs on a libnats thread (see the type's notes).
    /// `pendingBytes` bounds what libnats holds for the handler (64 MiB by
    /// default): past it, it drops messages and reports a slow consumer.
    package func subscribe(
        _ subject: String, queue: String? = nil, pendingBytes: Int? = nil, handler: @escaping @Sendable (NATSMessage) -> Void
    ) throws(NATSError) -> NATSSubscription {
        let box = Unmanaged.passRetained(NATSSubscription.HandlerBox(handler))
        let context = box.toOpaque()
        let callback: natsMsgHandler = { _, _, message, context in
            guard let message else { return }
            let copy = NATSMessage(copying: message)
            libnats.natsMsg_Destroy(message)
            if let context { Unmanaged<NATSSubscription.HandlerBox>.fromOpaque(context).takeUnretainedValue().handler(copy) }
        }
        var created: OpaquePointer?
        let status = if let queue {
            libnats.natsConnection_QueueSubscribe(&created, connection, subject, queue, callback, context)
        } else {
            libnats.natsConnection_Subscribe(&created, connection, subject, callback, context)
        }
        guard status == NATS_OK, let subscription = created else {
            box.release()
            throw NATSError(status, "subscribe to \(subject)")
        }
        if let pendingBytes {
            // -1: no limit on the count of messages, only on their bytes.
            let status = libnats.natsSubscription_SetPendingLimits(subscription, -1, Int32(clamping: pendingBytes))
            if status != NATS_OK {
                Logger(label: "mediator.nats").warning("no pending limit for \(subject): \(NATSError(status, "pending limits"))")
            }
        }
        // The handler's box goes when libnats says no callback can run any more.
        let completion = libnats.natsSubscription_SetOnCompleteCB(subscription, { context in
            if let context { Unmanaged<NATSSubscription.HandlerBox>.fromOpaque(context).release() }
        }, context)
        if completion != NATS_OK {
            // Without the callback the box would be freed under a running handler: keep it (a leak, not a crash).
            Logger(label: "mediator.nats").warning("no completion callback for \(subject); its handler is kept")
        }
        return NATSSubscription(subscription, subject: subject, owner: self)
    }
}

extension NATSConnection.EventBox {
    static func deliver(_ event: NATSConnectionEvent, _ context: UnsafeMutableRawPointer?) {
        guard let context else { return }
        Unmanaged<NATSConnection.EventBox>.fromOpaque(context).takeUnretainedValue().handler(event)
    }
}
