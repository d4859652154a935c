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
final class ExportedCalls: Sendable {
    private let client: MediatorClient
    private let connection: NATSConnection
    /// This host's name, in the keep-alives.
    private let host: String
    private let logger: Logger
    private let running = Mutex<[String: Task<Void, Never>]>([:])

    init(client: MediatorClient, connection: NATSConnection, host: String, logger: Logger) {
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
        switch BridgeMessages.CallRequest.decode(message.payload) {
        case .success(let decoded): request = decoded
        case .failure(let error):
            answer(reply, .error(error.delivered(.no)))
            return
        }
        let task = Task { [self] in
            await serve(request, target: target, reply: reply, from: message)
            _ = running.withLock { $0.removeValue(forKey: reply) }
        }
        running.withLock { $0[reply] = task }
    }

    /// `<prefix>.cancel {"reply": SUBJECT}`: the caller gave up.
    func cancel(_ message: NATSMessage) {
        guard let value = try? JSONParser.parse(message.payload), let reply = value["reply"]?.stringValue else { return }
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

    private func serve(_ request: BridgeMessages.CallRequest, target: String, reply: String, from message: NATSMessage) async {
        let timeout = request.timeoutMs.map { Duration.milliseconds($0) }
        let remote = Self.remoteCaller(message)
        let host = message.header(BridgeMessages.Header.host)
        let beat = request.keepAliveMs.map { milliseconds in
            Task { [self] in await keepAlive(reply, every: .milliseconds(milliseconds)) }
        }
        defer { beat?.cancel() }
        do {
            if request.more {
                // Each response passed on as it comes, marked as the daemon marked it.
                for try await item in client.markedStream(
                    target, request.action, params: request.params, timeout: timeout, remoteCaller: remote)
                {
                    answer(reply, .result(item.value, continues: !item.isFinal))
                }
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

    private func answer(_ reply: String, _ message: BridgeMessages.Reply) {
        do {
            try connection.publish(reply, payload: message.encoded)
        } catch {
            logger.debug("cannot answer over NATS: \(error)", metadata: ["reply": "\(reply)"])
        }
    }
}
