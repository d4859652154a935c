import MediatorProtocol
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// `mediator/monitor`: a connection that asks for it gets, as the event
/// `mediator.monitor`, a record of every request, response and event the
/// daemon routes and of every call it refuses itself (optionally filtered
/// by target and event patterns), with both peers and the time. Who
/// watches what is ``Monitors``'s; here the records are written.
extension Broker {
    /// The event name of monitor records.
    static let monitorRecordEvent = "mediator.monitor"

    func monitorAction(_ params: [String: JSONValue], _ connection: ConnectionID) -> Result<JSONValue, MediatorError> {
        guard let peer = peers[connection] else { return .failure(MediatorError(.internal, "unknown connection")) }
        if let denial = checkPolicy(.monitor, peer.credentials) { return .failure(denial) }
        let filter: Monitors.Filter
        switch Monitors.Filter.parse(params) {
        case .success(let parsed): filter = parsed
        case .failure(let error): return .failure(error)
        }
        monitors.attach(connection, filter)
        logger.info("monitor attached", metadata: ["connection": "\(connection)", "pid": "\(peer.credentials.pid)", "uid": "\(peer.credentials.uid)"])
        return .success(.object([:]))
    }

    func peerJSON(_ connection: ConnectionID) -> JSONValue {
        guard let peer = peers[connection] else { return ["connection": .int(Int64(connection))] }
        var members: [String: JSONValue] = [
            "connection": .int(Int64(connection)), "pid": .int(Int64(peer.credentials.pid)),
            "uid": .int(Int64(peer.credentials.uid)),
        ]
        if let name = peer.name { members["name"] = .string(name) }
        return .object(members)
    }

    /// Answers a call that no component will see (forbidden, unknown
    /// target or action, invalid params, a limit met) and shows it to the
    /// monitors as a `refused` record: otherwise an operator looking for
    /// why a call fails would see nothing. A call without an id gets no
    /// answer, but its refusal is still recorded.
    func refuse(_ request: RouteRequest, from connection: ConnectionID, _ error: MediatorError, now: NIODeadline) {
        if let descriptors = request.descriptors { release(descriptors) }
        let answer = request.idBytes.map { writer.error(callerID: $0, error, delivered: .no) }
        if let answer { send(connection, answer) }
        if !monitors.isEmpty {
            monitorRecord(
                "refused", from: connection, to: nil, target: request.target, action: request.action, event: nil,
                elapsed: nil, message: answer ?? writer.error(callerID: nil, error, delivered: .no), now: now)
        }
    }

    /// Sends one record to every monitor that wants it; `message` is the
    /// line as it went out, spliced in unchanged.
    func monitorRecord(
        _ type: String, from: ConnectionID, to: ConnectionID?, target: String?, action: String? = nil, event: String?,
        elapsed: TimeAmount?, message: ByteBuffer, now: NIODeadline
    ) {
        // The daemon's own uptime, as in `mediator/stats`: not the machine's.
        var members: [String: JSONValue] = [
            "type": .string(type), "from": peerJSON(from),
            "uptime_us": .int(max(0, (now - statisticsStart).nanoseconds / 1000)),
        ]
        if let to { members["to"] = peerJSON(to) }
        if let target { members["target"] = .string(target) }
        if let action { members["action"] = .string(action) }
        if let event { members["event"] = .string(event) }
        if let elapsed { members["elapsed_us"] = .int(elapsed.nanoseconds / 1000) }
        var line: ByteBuffer?
        for connection in monitors.wanting(target: target, event: event, from: from, to: to) {
            if !quotas.nothingQueued, let uid = peers[connection]?.credentials.uid, skipsEvent(toward: uid) { continue }
            if line == nil {
                var body = writer.allocator.buffer(capacity: message.readableBytes + 160)
                var head = JSONValue.object(members).encoded
                head.removeLast()  // the closing brace: the message follows
                body.writeBytes(head)
                body.writeStaticString(",\"message\":")
                var trimmed = message
                if trimmed.readableBytes > 0, trimmed.getInteger(at: trimmed.writerIndex - 1, as: UInt8.self) == 0x0A {
                    trimmed.moveWriterIndex(to: trimmed.writerIndex - 1)
                }
                body.writeImmutableBuffer(trimmed)
                body.writeStaticString("}")
                line = writer.event(Self.monitorRecordEvent, rawData: body)
            }
            if let line { send(connection, line) }
        }
    }
}
