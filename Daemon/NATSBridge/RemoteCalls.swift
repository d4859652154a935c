import Logging
import MediatorClient
import MediatorNATS
import MediatorProtocol
import Synchronization

/// The calls this host sent over NATS and waits on, keyed by the token at
/// the end of their reply subject (`<inbox>.<token>`). One wildcard
/// subscription on the inbox feeds them all.
///
/// Every call gets exactly one ending: a final reply, an error reply, no
/// responders (`target_not_found`), the connection to NATS going away
/// (`component_unavailable`, at once), or its own deadline.
final class RemoteCalls: Sendable {
    let inbox: String
    private let subjects: BridgeSubjects
    private let host: String
    private let logger: Logger
    private struct Waiting {
        var continuation: AsyncStream<BridgeMessages.Reply>.Continuation
        /// When to stop waiting on a host that vanished without a word.
        var deadline: ContinuousClock.Instant
        /// The sizes of the partials received and not yet passed on to the
        /// caller, oldest first, and their sum.
        var buffered: [Int] = []
        var bufferedBytes = 0
        /// Where the call went, to cancel it there.
        var connection: NATSConnection?
    }

    /// Bytes of partials of one call received from NATS and not yet passed
    /// on to the local daemon: past it, the serving host sends faster than
    /// the bridge can pass them on; the call is cancelled there and answered
    /// `overloaded`. (A caller that reads too slowly is the daemon's to see:
    /// it ends the stream, and the stand-in's cancellation ends it here.)
    static let maxBufferedPartialBytes = 16 << 20
    /// Bytes libnats holds for the inbox's handler, all calls together
    /// (its default is 64 MiB): past it, replies are dropped and a slow
    /// consumer reported; a call that loses its final reply times out.
    static let inboxPendingBytes = 32 << 20

    private let waiting = Mutex<[String: Waiting]>([:])
    private let nextToken = Atomic<Int>(1)

    init(inbox: String, subjects: BridgeSubjects, host: String, logger: Logger) {
        self.inbox = inbox
        self.subjects = subjects
        self.host = host
        self.logger = logger
    }

    /// A reply arrived on the inbox (a libnats thread).
    func deliver(_ message: NATSMessage) {
        guard let token = message.subject.split(separator: ".").last.map(String.init) else { return }
        let reply: BridgeMessages.Reply
        if message.isNoResponders {
            reply = .error(MediatorError(.targetNotFound, "no host serves this target through NATS any more"))
        } else if let decoded = BridgeMessages.Reply.decode(message.payload) {
            reply = decoded
        } else {
            reply = .error(MediatorError(.internal, "an unreadable reply from another host"))
        }
        let (continuation, overflow) = waiting.withLock { table -> (AsyncStream<BridgeMessages.Reply>.Continuation?, NATSConnection?) in
            guard case .result(_, continues: true) = reply else { return (table.removeValue(forKey: token)?.continuation, nil) }
            guard var entry = table[token] else { return (nil, nil) }
            entry.buffered.append(message.payload.count)
            entry.bufferedBytes += message.payload.count
            if entry.bufferedBytes > Self.maxBufferedPartialBytes {
                table[token] = nil
                return (entry.continuation, entry.connection)
            }
            table[token] = entry
            return (entry.continuation, nil)
        }
        guard let continuation else { return }  // late, or for a call given up
        if let overflow {
            try? overflow.publish(subjects.cancel, payload: JSONValue.object(["reply": .string(message.subject)]).encoded)
            continuation.yield(.error(MediatorError(
                .overloaded, "another host sent partial results faster than they could be passed on; the call was cancelled there",
                data: ["max_buffered_bytes": .int(Int64(Self.maxBufferedPartialBytes))])))
            continuation.finish()
            return
        }
        continuation.yield(reply)
        if case .result(_, continues: true) = reply { return }
        continuation.finish()
    }

    /// NATS went away: every call in flight fails now, not at its timeout.
    func failAll(_ error: MediatorError) {
        let all = waiting.withLock { table in
            defer { table.removeAll() }
            return table.values.map(\.continuation)
        }
        for continuation in all {
            continuation.yield(.error(error))
            continuation.finish()
        }
    }

    /// Ends the waits whose deadline passed (run every few hundred ms): the
    /// daemon has timed those calls out already; this frees their entries.
    func sweep(now: ContinuousClock.Instant = .now) {
        let expired = waiting.withLock { table -> [AsyncStream<BridgeMessages.Reply>.Continuation] in
            let keys = table.filter { $0.value.deadline <= now }.map(\.key)
            return keys.compactMap { table.removeValue(forKey: $0)?.continuation }
        }
        for continuation in expired {
            continuation.yield(.error(MediatorError(.timeout, "no answer from another host in time")))
            continuation.finish()
        }
    }

    /// Sends one call of a proxied target to whichever host serves it, and
    /// answers the local caller: partials as they come, then the result.
    func forward(_ target: String, over connection: NATSConnection, _ context: CallContext) async throws -> JSONValue {
        guard connection.isConnected else {
            throw MediatorError(.componentUnavailable, "\"\(target)\" is on another host and NATS is not reachable")
        }
        let token = String(nextToken.add(1, ordering: .relaxed).oldValue)
        let reply = inbox + "." + token
        let (replies, continuation) = AsyncStream.makeStream(of: BridgeMessages.Reply.self)
        // The daemon times the call out itself; this bound only ends a wait
        // on a host that vanished without a word (see sweep()).
        let bound = (context.timeout ?? .milliseconds(ProtocolConstants.defaultTimeoutMs)) + .seconds(1)
        waiting.withLock { $0[token] = Waiting(continuation: continuation, deadline: .now + bound, connection: connection) }
        let request = BridgeMessages.CallRequest(
            action: context.action, params: context.params,
            timeoutMs: context.timeout.map { Self.milliseconds($0) }, more: context.acceptsPartials)
        var headers: [String: [String]] = [BridgeMessages.Header.host: [host]]
        if let caller = context.caller {
            headers[BridgeMessages.Header.callerUID] = [String(caller.uid)]
            headers[BridgeMessages.Header.callerPID] = [String(caller.pid)]
            if let name = caller.name { headers[BridgeMessages.Header.callerName] = [name] }
        }
        do {
            try connection.publish(subjects.call(target), reply: reply, headers: headers, payload: request.encoded)
        } catch {
            waiting.withLock { _ = $0.removeValue(forKey: token) }
            throw MediatorError(.componentUnavailable, "cannot send \"\(target)/\(context.action)\" over NATS: \(error)")
        }
        defer { waiting.withLock { _ = $0.removeValue(forKey: token) } }
        return try await withTaskCancellationHandler {
            for await answer in replies {
                switch answer {
                case .result(let value, continues: true):
                    waiting.withLock { table in
                        if let size = table[token]?.buffered.first {
                            table[token]?.buffered.removeFirst()
                            table[token]?.bufferedBytes -= size
                        }
                    }
                    await context.send(partial: value)
                case .result(let value, continues: false): return value
                case .error(let error): throw error
                }
            }
            // Finished without an answer: the caller gave up (onCancel below).
            throw MediatorError(.cancelled, "the call was cancelled")
        } onCancel: {
            // Our caller gave up (or the daemon cancelled): tell whoever serves it.
            let pending = waiting.withLock { $0.removeValue(forKey: token) }
            pending?.continuation.finish()
            try? connection.publish(subjects.cancel, payload: JSONValue.object(["reply": .string(reply)]).encoded)
        }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(1, seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}
