import Logging
@_spi(NATSBridge) import MediatorClient
import MediatorNATS
import MediatorProtocol
import Synchronization

/// Serves the calls that other hosts send to this host's exported targets:
/// each becomes a call through the local daemon (which routes it to a local
/// instance, least busy first), and its answers go back on the call's reply
/// subject. A `<prefix>.cancel` naming the reply subject cancels it.
/// While a call whose caller asked for keep-alives runs, `{"alive": true}`
/// goes on its reply subject every `keepalive_ms`, so that the caller can
/// tell this host still works on it from a host that is gone.
///
/// A call that carries blobs (``BridgeBlobs``) is answered
/// `{"send_blobs": SUBJECT}` first; its chunks come on SUBJECT (under
/// ``inbox``), and once all have, it is called with them as sealed memfds.
/// A result with sealed memfds goes back as blobs to a caller that takes them.
final class ExportedCalls: Sendable {
    private let client: MediatorClient
    private let connection: NATSConnection
    /// This host's name, in the keep-alives.
    private let host: String
    private let logger: Logger
    private let running = Mutex<[String: Task<Void, Never>]>([:])
    /// Where the chunks of the calls' blobs come: `<inbox>.<token>`.
    let inbox = NATSConnection.newInbox()
    /// Bytes of sealed memfds a call may carry each way (``NATSBridgeSettings/maxFdBytes``).
    private let maxFdBytes: Int

    /// A call whose blobs are still coming.
    private struct Incoming: Sendable {
        var request: BridgeMessages.CallRequest
        var target: String
        var reply: String
        var message: NATSMessage
        var assembly: BridgeBlobs.Assembly
    }

    private let incoming = Mutex<[String: Incoming]>([:])
    /// Calls whose blobs are coming at once, at most; and their blobs
    /// together are at most ``maxFdBytes`` (one call's worth): past
    /// either, a call with blobs is answered `overloaded`.
    static let maxIncomingCalls = 16
    private let nextToken = Atomic<Int>(1)

    init(
        client: MediatorClient, connection: NATSConnection, host: String,
        maxFdBytes: Int = BridgeBlobs.defaultMaxBytesPerCall, logger: Logger
    ) {
        self.maxFdBytes = maxFdBytes
        self.client = client
        self.connection = connection
        self.host = host
        self.logger = logger
    }

    /// A call for `target` arrived (a libnats thread): handled in a task of its own.
    func received(_ message: NATSMessage, target: String) {
        guard let reply = message.reply else {
            logger.debug("a NATS call without a reply subject ignored", metadata: ["target": "\(target)"])
            return
        }
        let request: BridgeMessages.CallRequest
        switch BridgeMessages.CallRequest.decode(message.payload, maxBlobBytes: maxFdBytes) {
        case .success(let decoded): request = decoded
        case .failure(let error):
            answer(reply, .error(error.delivered(.no)))
            return
        }
        guard !request.blobs.isEmpty else {
            start(request, target: target, reply: reply, from: message, descriptors: [])
            return
        }
        let token = String(nextToken.add(1, ordering: .relaxed).oldValue)
        let taken = incoming.withLock { table -> Bool in
            let coming = table.values.reduce(0) { $0 + $1.assembly.sizes.reduce(0, +) }
            guard table.count < Self.maxIncomingCalls, coming + request.blobs.reduce(0, +) <= maxFdBytes else { return false }
            table[token] = Incoming(
                request: request, target: target, reply: reply, message: message, assembly: BridgeBlobs.Assembly(sizes: request.blobs))
            return true
        }
        guard taken else {
            answer(reply, .error(MediatorError(
                .overloaded, "too many calls with descriptors arriving at once on this host",
                data: ["max_incoming_calls": .int(Int64(Self.maxIncomingCalls)), "max_fd_bytes": .int(Int64(maxFdBytes))]
            ).delivered(.no)))
            return
        }
        // A caller that never sends them: forgotten after the call's own time.
        let bound = Duration.milliseconds(request.timeoutMs ?? ProtocolConstants.defaultTimeoutMs) + .seconds(1)
        Task { [self] in
            try? await Task.sleep(for: bound)
            _ = incoming.withLock { $0.removeValue(forKey: token) }
        }
        answer(reply, .sendBlobs(subject: inbox + "." + token))
        chunk(nil, offset: 0, [], token: token)
    }

    /// A message on ``inbox``: a chunk of a call's blobs.
    func received(chunk message: NATSMessage) {
        guard let token = message.subject.split(separator: ".").last.map(String.init),
              let (blob, offset) = BlobDescriptors.chunk(message)
        else { return }
        chunk(blob, offset: offset, message.payload, token: token)
    }

    /// Adds a chunk (none: checks whether all are there) to the call of
    /// `token`, and calls it once its blobs are complete.
    private func chunk(_ blob: Int?, offset: Int, _ bytes: [UInt8], token: String) {
        let outcome = incoming.withLock { table -> (Incoming, MediatorError?)? in
            guard var call = table[token] else { return nil }
            if let blob, let error = call.assembly.add(blob: blob, offset: offset, bytes: bytes) {
                table[token] = nil
                return (call, error)
            }
            if call.assembly.isComplete {
                table[token] = nil
                return (call, nil)
            }
            table[token] = call
            return nil
        }
        guard let (call, failure) = outcome else { return }
        do throws(MediatorError) {
            if let failure { throw failure }
            let descriptors = try BlobDescriptors.descriptors(call.assembly)
            start(call.request, target: call.target, reply: call.reply, from: call.message, descriptors: descriptors)
        } catch {
            answer(call.reply, .error(error.delivered(.no)))
        }
    }

    private func start(
        _ request: BridgeMessages.CallRequest, target: String, reply: String, from message: NATSMessage,
        descriptors: [OwnedFileDescriptor]
    ) {
        let task = Task { [self] in
            await serve(request, target: target, reply: reply, from: message, descriptors: descriptors)
            _ = running.withLock { $0.removeValue(forKey: reply) }
        }
        running.withLock { $0[reply] = task }
    }

    /// `<prefix>.cancel {"reply": SUBJECT}`: the caller gave up.
    func cancel(_ message: NATSMessage) {
        guard let value = try? JSONParser.parse(message.payload), let reply = value["reply"]?.stringValue else { return }
        incoming.withLock { table in table = table.filter { $0.value.reply != reply } }
        running.withLock { $0.removeValue(forKey: reply) }?.cancel()
    }

    /// Cancels everything still running (the bridge stops).
    func cancelAll() {
        for task in running.withLock({ table in defer { table.removeAll() }; return Array(table.values) }) { task.cancel() }
    }

    /// Who called on the other host, from the call's headers: the local
    /// daemon passes it to the component as `caller.remote` and checks its
    /// policy's remote rules with it. Without a host header the caller is
    /// an unnamed NATS client.
    static func remoteCaller(_ message: NATSMessage) -> JSONValue {
        let host = message.header(BridgeMessages.Header.host).map { String($0.prefix(256)) }
        let name = message.header(BridgeMessages.Header.callerName).flatMap { $0.utf8.count <= 256 ? $0 : nil }
        return RemoteCaller(
            host: host.flatMap { $0.isEmpty ? nil : $0 } ?? "nats",
            uid: message.header(BridgeMessages.Header.callerUID).flatMap { UInt32($0) } ?? UInt32.max,
            pid: message.header(BridgeMessages.Header.callerPID).flatMap { Int32($0) } ?? 0,
            name: name
        ).json
    }

    private func serve(
        _ request: BridgeMessages.CallRequest, target: String, reply: String, from message: NATSMessage,
        descriptors: [OwnedFileDescriptor]
    ) async {
        let timeout = request.timeoutMs.map { Duration.milliseconds($0) }
        let remote = Self.remoteCaller(message)
        let host = message.header(BridgeMessages.Header.host)
        let beat = request.keepAliveMs.map { milliseconds in
            Task { [self] in await keepAlive(reply, every: .milliseconds(milliseconds)) }
        }
        defer { beat?.cancel() }
        do {
            if request.more && request.fds == BridgeBlobs.version {
                // As below, each response's descriptors as blobs after it.
                for try await item in client.markedStream(
                    target, request.action, params: request.params, descriptors: descriptors, timeout: timeout, remoteCaller: remote)
                {
                    try answer(reply, item.value, continues: !item.isFinal, descriptors: item.descriptors)
                }
            } else if request.more {
                // Each response passed on as it comes, marked as the daemon marked it.
                for try await item in client.markedStream(
                    target, request.action, params: request.params, timeout: timeout, remoteCaller: remote)
                {
                    answer(reply, .result(item.value, continues: !item.isFinal))
                }
            } else if request.fds == BridgeBlobs.version {
                // A caller that takes blobs: descriptors may come back.
                let result = try await client.call(
                    target, request.action, params: request.params, descriptors: descriptors, timeout: timeout, remoteCaller: remote)
                try answer(reply, result.result, continues: false, descriptors: result.descriptors)
            } else {
                let value = try await client.call(
                    target, request.action, params: request.params, timeout: timeout, remoteCaller: remote)
                answer(reply, .result(value, continues: false))
            }
        } catch let error as MediatorError {
            // A cancelled call is answered by no one: its caller is gone.
            if error.code == .cancelled && Task.isCancelled { return }
            answer(reply, .error(error))
        } catch {
            if Task.isCancelled { return }
            answer(reply, .error(MediatorError(.failed, "\(error)")))
        }
        logger.trace("served a call from another host", metadata: ["target": "\(target)", "host": "\(host ?? "?")"])
    }

    /// Says the call on `reply` still runs, every `interval` until cancelled
    /// (the call ended). Nothing at first: a call answered within the
    /// interval costs no keep-alive.
    private func keepAlive(_ reply: String, every interval: Duration) async {
        while (try? await Task.sleep(for: interval)) != nil {
            answer(reply, .alive(host: host))
        }
    }

    /// Answers with `result`, its descriptors as blobs that follow it.
    ///
    /// - Throws: `fds_not_supported` for a descriptor that is not a sealed
    ///   memfd, `frame_too_large` over the bound: the answer instead.
    private func answer(
        _ reply: String, _ result: JSONValue, continues: Bool, descriptors: [OwnedFileDescriptor]
    ) throws(MediatorError) {
        guard !descriptors.isEmpty else {
            answer(reply, .result(result, continues: continues))
            return
        }
        let memories = try BlobDescriptors.contents(descriptors, limit: maxFdBytes)
        answer(reply, .resultWithBlobs(result, continues: continues, sizes: memories.map(\.count)))
        do {
            try BlobDescriptors.send(memories, to: reply, over: connection)
        } catch {
            logger.debug("cannot send a result's descriptors over NATS: \(error)", metadata: ["reply": "\(reply)"])
        }
    }

    private func answer(_ reply: String, _ message: BridgeMessages.Reply) {
        do {
            try connection.publish(reply, payload: message.encoded)
        } catch {
            logger.debug("cannot answer over NATS: \(error)", metadata: ["reply": "\(reply)"])
        }
    }
}
