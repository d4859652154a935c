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
/// (`component_unavailable`, at once), the host serving it going silent or
/// leaving (`component_unavailable`, within ``livenessTimeout``), or its
/// own deadline. The errors made here say what is known of the call's
/// delivery (docs/protocol.md): `false` when it never left, else unknown.
///
/// Keep-alives: each call asks the serving host for one every third of
/// ``livenessTimeout``. A call to a target whose every announcing host says
/// it sends them, or a call for which one came, is given up once nothing
/// (keep-alive, partial, answer) has come for ``livenessTimeout``; a call
/// that may be served by an older host waits for its timeout as before.
final class RemoteCalls: Sendable {
    let inbox: String
    private let subjects: BridgeSubjects
    private let host: String
    /// How long a call to a host that sends keep-alives may go without a
    /// word before the host is taken for gone (`liveness_timeout_ms`).
    let livenessTimeout: Duration
    /// Bytes of sealed memfds a call may carry each way (``NATSBridgeSettings/maxFdBytes``).
    let maxFdBytes: Int
    private let logger: Logger

    /// A reply as the local caller gets it: with the descriptors made of
    /// the blobs that came with it (``BridgeBlobs``).
    struct Answer: Sendable {
        var reply: BridgeMessages.Reply
        var descriptors: [OwnedFileDescriptor] = []
    }

    /// A result whose blobs are still coming.
    private struct Receiving {
        var result: JSONValue
        var continues: Bool
        var assembly: BridgeBlobs.Assembly
    }

    private struct Waiting {
        var continuation: AsyncStream<Answer>.Continuation
        /// The result whose blobs' chunks come now.
        var receiving: Receiving?
        var target: String
        /// When to stop waiting on a host that vanished without a word.
        var deadline: ContinuousClock.Instant
        /// When the last word on the call came (it was sent, a partial, a keep-alive).
        var lastHeard: ContinuousClock.Instant
        /// Whether silence past the liveness timeout ends the call.
        var watched: Bool
        /// The host that said it runs the call (its keep-alives name it).
        var servedBy: String?
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

    /// What another host announced, as far as the calls sent to it go.
    private struct ServingHost {
        var targets: Set<String>
        var keepsAlive: Bool
        /// The version of ``BridgeBlobs`` it takes (nil: none).
        var fds: Int64?
        var lastSeen: ContinuousClock.Instant
        /// Three of its announce intervals: past that without news, it is gone.
        var expiry: Duration
    }

    private struct State {
        var waiting: [String: Waiting] = [:]
        var hosts: [String: ServingHost] = [:]
    }

    private let state = Mutex(State())
    private let nextToken = Atomic<Int>(1)

    init(
        inbox: String, subjects: BridgeSubjects, host: String, livenessTimeout: Duration,
        maxFdBytes: Int = BridgeBlobs.defaultMaxBytesPerCall, logger: Logger
    ) {
        self.maxFdBytes = maxFdBytes
        self.inbox = inbox
        self.subjects = subjects
        self.host = host
        self.livenessTimeout = livenessTimeout
        self.logger = logger
    }

    /// The keep-alive interval each call asks for: a third of the liveness
    /// timeout, so that one lost keep-alive does not end a call.
    var keepAliveMs: Int64 {
        let range = BridgeMessages.CallRequest.keepAliveRange
        return min(max(Self.milliseconds(livenessTimeout / 3), range.lowerBound), range.upperBound)
    }

    /// A reply arrived on the inbox (a libnats thread) at `now`.
    func deliver(_ message: NATSMessage, now: ContinuousClock.Instant = .now) {
        guard let token = message.subject.split(separator: ".").last.map(String.init) else { return }
        if let (blob, offset) = BlobDescriptors.chunk(message) {
            received(blob: blob, offset: offset, message.payload, token: token, subject: message.subject, now: now)
            return
        }
        let reply: BridgeMessages.Reply
        if message.isNoResponders {
            // NATS found no subscriber: the call went nowhere.
            reply = .error(MediatorError(.targetNotFound, "no host serves this target through NATS any more").delivered(.no))
        } else if let decoded = BridgeMessages.Reply.decode(message.payload, maxBlobBytes: maxFdBytes) {
            reply = decoded
        } else {
            reply = .error(MediatorError(.internal, "an unreadable reply from another host").delivered(.unknown))
        }
        typealias Continuation = AsyncStream<Answer>.Continuation
        let (continuation, overflow) = state.withLock { state -> (Continuation?, NATSConnection?) in
            // Changed where it is stored: the dictionary's getter would copy it.
            guard let slot = state.waiting.index(forKey: token) else { return (nil, nil) }
            switch reply {
            case .sendBlobs:
                state.waiting.values[slot].lastHeard = now
                return (state.waiting.values[slot].continuation, nil)
            case .resultWithBlobs(let result, let continues, let sizes):
                state.waiting.values[slot].lastHeard = now
                state.waiting.values[slot].receiving = Receiving(
                    result: result, continues: continues, assembly: BridgeBlobs.Assembly(sizes: sizes))
                if continues {
                    // Counted with its blobs; one partial alone always passes (its blobs are bounded by maxFdBytes).
                    let bytes = message.payload.count + sizes.reduce(0, +)
                    state.waiting.values[slot].buffered.append(bytes)
                    state.waiting.values[slot].bufferedBytes += bytes
                    if state.waiting.values[slot].bufferedBytes > Self.maxBufferedPartialBytes
                        && state.waiting.values[slot].buffered.count > 1
                    {
                        let call = state.waiting.remove(at: slot).value
                        return (call.continuation, call.connection)
                    }
                }
                return (state.waiting.values[slot].continuation, nil)
            case .alive(let host):
                state.waiting.values[slot].lastHeard = now
                state.waiting.values[slot].watched = true
                if !host.isEmpty { state.waiting.values[slot].servedBy = host }
                return (nil, nil)
            case .result(_, continues: true):
                state.waiting.values[slot].lastHeard = now
                state.waiting.values[slot].buffered.append(message.payload.count)
                state.waiting.values[slot].bufferedBytes += message.payload.count
                if state.waiting.values[slot].bufferedBytes > Self.maxBufferedPartialBytes {
                    let call = state.waiting.remove(at: slot).value
                    return (call.continuation, call.connection)
                }
                return (state.waiting.values[slot].continuation, nil)
            case .result, .error:
                return (state.waiting.remove(at: slot).value.continuation, nil)
            }
        }
        guard let continuation else { return }  // a keep-alive, or late, or for a call given up
        if let overflow {
            try? overflow.publish(subjects.cancel, payload: JSONValue.object(["reply": .string(message.subject)]).encoded)
            continuation.fail(MediatorError(
                .overloaded, "another host sent partial results faster than they could be passed on; the call was cancelled there",
                data: ["max_buffered_bytes": .int(Int64(Self.maxBufferedPartialBytes))]).delivered(.unknown))
            return
        }
        if case .resultWithBlobs = reply {
            // Blobs that are all empty have no chunk to wait for.
            received(blob: nil, offset: 0, [], token: token, subject: message.subject, now: now)
            return
        }
        continuation.yield(Answer(reply: reply))
        switch reply {
        case .result(_, continues: true), .sendBlobs: return
        default: continuation.finish()
        }
    }

    /// A chunk of the blobs of the result that came last on `token` (none:
    /// see whether they are complete): once all have come, the result is
    /// passed on with new sealed memfds. A chunk out of order ends the call.
    private func received(
        blob: Int?, offset: Int, _ bytes: [UInt8], token: String, subject: String, now: ContinuousClock.Instant
    ) {
        typealias Outcome = (
            continuation: AsyncStream<Answer>.Continuation, complete: Receiving?, error: MediatorError?, connection: NATSConnection?
        )
        let outcome = state.withLock { state -> Outcome? in
            guard let slot = state.waiting.index(forKey: token), var receiving = state.waiting.values[slot].receiving else {
                return nil
            }
            state.waiting.values[slot].lastHeard = now
            if let blob, let error = receiving.assembly.add(blob: blob, offset: offset, bytes: bytes) {
                let call = state.waiting.remove(at: slot).value
                return (call.continuation, nil, error, call.connection)
            }
            guard receiving.assembly.isComplete else {
                state.waiting.values[slot].receiving = receiving
                return nil
            }
            state.waiting.values[slot].receiving = nil
            let continuation = state.waiting.values[slot].continuation
            if !receiving.continues { state.waiting.remove(at: slot) }
            return (continuation, receiving, nil, nil)
        }
        guard let outcome else { return }
        var failure = outcome.error
        if let complete = outcome.complete {
            do {
                let descriptors = try BlobDescriptors.descriptors(complete.assembly)
                outcome.continuation.yield(Answer(reply: .result(complete.result, continues: complete.continues), descriptors: descriptors))
                if !complete.continues { outcome.continuation.finish() }
                return
            } catch {
                failure = error
                state.withLock { _ = $0.waiting.removeValue(forKey: token) }
            }
        }
        guard let failure else { return }
        outcome.continuation.fail(failure.delivered(.unknown))
        // The serving host may still be at it.
        try? outcome.connection?.publish(subjects.cancel, payload: JSONValue.object(["reply": .string(subject)]).encoded)
    }

    /// An announcement on `<prefix>.hosts` (a libnats thread): which hosts
    /// serve what, and whether they send keep-alives. A host that leaves
    /// fails the calls it said it runs, at once.
    func heard(_ message: NATSMessage) {
        guard let announcement = BridgeMessages.Announcement.decode(message.payload), announcement.host != host else { return }
        let now = ContinuousClock.now
        let left = state.withLock { state -> [AsyncStream<Answer>.Continuation] in
            guard announcement.leaving else {
                state.hosts[announcement.host] = ServingHost(
                    targets: Set(announcement.targets.map(\.name)), keepsAlive: announcement.keepsAlive, fds: announcement.fds,
                    lastSeen: now,
                    expiry: .milliseconds(announcement.intervalMs) * 3)
                return []
            }
            state.hosts[announcement.host] = nil
            let tokens = state.waiting.filter { $0.value.servedBy == announcement.host }.map(\.key)
            return tokens.compactMap { state.waiting.removeValue(forKey: $0)?.continuation }
        }
        let error = MediatorError(.componentUnavailable, "\(announcement.host) left with the call in flight").delivered(.unknown)
        for continuation in left {
            continuation.fail(error)
        }
    }

    /// NATS went away: every call in flight fails now, not at its timeout.
    func failAll(_ error: MediatorError) {
        let all = state.withLock { state in
            defer { state.waiting.removeAll() }
            return state.waiting.values.map(\.continuation)
        }
        // Sent, and maybe run: nobody knows.
        let error = error.delivered(.unknown)
        for continuation in all {
            continuation.fail(error)
        }
    }

    /// Ends the waits that have to end by `now`: past their deadline (the
    /// daemon has timed those calls out already; this frees their entries),
    /// silent for longer than the liveness timeout, or served by a host
    /// that stopped announcing.
    func sweep(now: ContinuousClock.Instant = .now) {
        let ended = state.withLock { state -> [(AsyncStream<Answer>.Continuation, MediatorError)] in
            state.hosts = state.hosts.filter { now - $0.value.lastSeen <= $0.value.expiry }
            var ended: [(token: String, error: MediatorError)] = []
            for (token, call) in state.waiting {
                if call.deadline <= now {
                    ended.append((token, MediatorError(.timeout, "no answer from another host in time")))
                } else if call.watched, now - call.lastHeard > livenessTimeout {
                    let who = call.servedBy ?? "the host serving \"\(call.target)\""
                    ended.append((token, MediatorError(
                        .componentUnavailable, "no word from \(who) for \(Self.milliseconds(livenessTimeout)) ms: taken for gone")))
                } else if let served = call.servedBy, state.hosts[served] == nil {
                    ended.append((token, MediatorError(.componentUnavailable, "\(served) stopped announcing with the call in flight")))
                }
            }
            return ended.compactMap { item in
                state.waiting.removeValue(forKey: item.token).map { ($0.continuation, item.error.delivered(.unknown)) }
            }
        }
        for (continuation, error) in ended {
            continuation.fail(error)
        }
    }

    /// Sweeps often enough for the liveness timeout to be kept within a
    /// tenth of it (at most every 250 ms), until cancelled.
    func watch() async {
        let period = min(max(livenessTimeout / 10, .milliseconds(20)), .milliseconds(250))
        while (try? await Task.sleep(for: period)) != nil { sweep() }
    }

    /// Whether a call to `target` may count on keep-alives from the start:
    /// every host announcing it sends them.
    private func keptAlive(_ target: String, in state: State) -> Bool {
        var any = false
        for serving in state.hosts.values where serving.targets.contains(target) {
            guard serving.keepsAlive else { return false }
            any = true
        }
        return any
    }

    /// Starts waiting on a call to `target` about to be sent: the token of
    /// its reply subject, and the replies as they come.
    func expect(
        _ target: String, timeout: Duration?, now: ContinuousClock.Instant = .now
    ) -> (token: String, replies: AsyncStream<Answer>) {
        let token = String(nextToken.add(1, ordering: .relaxed).oldValue)
        let (replies, continuation) = AsyncStream.makeStream(of: Answer.self)
        // The daemon times the call out itself; this bound only ends a wait
        // on a host that vanished without a word and sent no keep-alives (see sweep()).
        let bound = (timeout ?? .milliseconds(ProtocolConstants.defaultTimeoutMs)) + .seconds(1)
        state.withLock { state in
            state.waiting[token] = Waiting(
                continuation: continuation, target: target, deadline: now + bound, lastHeard: now,
                watched: keptAlive(target, in: state))
        }
        return (token, replies)
    }

    /// Sends one call of a proxied target to whichever host serves it, and
    /// answers the local caller: partials as they come, then the result.
    func forward(_ target: String, over connection: NATSConnection, _ context: CallContext) async throws -> MediatorReply {
        guard connection.isConnected else {
            throw MediatorError(.componentUnavailable, "\"\(target)\" is on another host and NATS is not reachable").delivered(.no)
        }
        // Refused before anything leaves: descriptors other than sealed memfds,
        // over the bound, or to a host whose bridge cannot take them.
        var memories: [MappedMemory] = []
        if !context.descriptors.isEmpty {
            do {
                try checkDescriptorsCanGo(to: target)
                memories = try BlobDescriptors.contents(context.descriptors, limit: maxFdBytes)
            } catch {
                throw error.delivered(.no)
            }
        }
        let (token, replies) = expect(target, timeout: context.timeout)
        state.withLock { $0.waiting[token]?.connection = connection }
        let reply = inbox + "." + token
        let request = BridgeMessages.CallRequest(
            action: context.action, params: context.params,
            timeoutMs: context.timeout.map { Self.milliseconds($0) }, more: context.acceptsPartials, keepAliveMs: keepAliveMs,
            fds: BridgeBlobs.version, blobs: memories.map(\.count))
        var headers: [String: [String]] = [BridgeMessages.Header.host: [host]]
        if let caller = context.caller {
            headers[BridgeMessages.Header.callerUID] = [String(caller.uid)]
            headers[BridgeMessages.Header.callerPID] = [String(caller.pid)]
            if let name = caller.name { headers[BridgeMessages.Header.callerName] = [name] }
        }
        do {
            try connection.publish(subjects.call(target), reply: reply, headers: headers, payload: request.encoded)
        } catch {
            state.withLock { _ = $0.waiting.removeValue(forKey: token) }
            throw MediatorError(.componentUnavailable, "cannot send \"\(target)/\(context.action)\" over NATS: \(error)").delivered(.no)
        }
        defer { state.withLock { _ = $0.waiting.removeValue(forKey: token) } }
        return try await withTaskCancellationHandler {
            for await answer in replies {
                switch answer.reply {
                case .sendBlobs(let subject):
                    do {
                        try BlobDescriptors.send(memories, to: subject, over: connection)
                    } catch {
                        throw MediatorError(.componentUnavailable, "cannot send descriptors' bytes over NATS: \(error)").delivered(.unknown)
                    }
                    memories = []
                    // Sending took its time: the serving host is not silent for it.
                    state.withLock { $0.waiting[token]?.lastHeard = .now }
                case .result(let value, continues: true):
                    state.withLock { state in
                        guard let slot = state.waiting.index(forKey: token), !state.waiting.values[slot].buffered.isEmpty
                        else { return }
                        state.waiting.values[slot].bufferedBytes -= state.waiting.values[slot].buffered.removeFirst()
                    }
                    await context.send(partial: value, descriptors: answer.descriptors)
                case .result(let value, continues: false): return MediatorReply(result: value, descriptors: answer.descriptors)
                case .error(let error): throw error
                case .alive, .resultWithBlobs: continue  // never yielded: deliver(_:) takes them
                }
            }
            // Finished without an answer: the caller gave up (onCancel below).
            throw MediatorError(.cancelled, "the call was cancelled")
        } onCancel: {
            // Our caller gave up (or the daemon cancelled): tell whoever serves it.
            let pending = state.withLock { $0.waiting.removeValue(forKey: token) }
            pending?.continuation.finish()
            try? connection.publish(subjects.cancel, payload: JSONValue.object(["reply": .string(reply)]).encoded)
        }
    }

    /// Throws `fds_not_supported` unless a call to `target` may carry
    /// blobs: every host announcing it takes this version of ``BridgeBlobs``.
    func checkDescriptorsCanGo(to target: String) throws(MediatorError) {
        let ready = state.withLock { state in
            let serving = state.hosts.values.filter { $0.targets.contains(target) }
            return !serving.isEmpty && serving.allSatisfy { $0.fds == BridgeBlobs.version }
        }
        guard ready else {
            throw MediatorError(
                .fdsNotSupported, "the host serving \"\(target)\" does not take descriptors across hosts (its bridge predates them)")
        }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(1, seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}

extension AsyncStream<RemoteCalls.Answer>.Continuation {
    /// Ends a call with `error`.
    func fail(_ error: MediatorError) {
        yield(RemoteCalls.Answer(reply: .error(error)))
        finish()
    }
}
