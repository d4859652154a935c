import NIOConcurrencyHelpers
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MediatorProtocol
import MediatorSocket

/// Inbound traffic, on the connection's thread: responses to our calls,
/// requests for a component, events.
extension Connection {
    // MARK: - Receiving (on the connection's thread)

    func receive(_ line: InboundLine) {
        line.withUnsafeBytes { raw in
            // Written in place: an envelope is some 200 bytes, copied at
            // each level when handed back in a Result.
            var envelope = Envelope(kind: .request)
            var payloads = EnvelopeParser.Payloads()
            // A caller's usual answer, `{"id":N,"result":…}`, and a
            // component's usual request, as mediatord writes them, without
            // the general parser's member loop and classification; any other
            // frame takes the general one (the plain paths leave the
            // envelope fresh when they do not read the frame).
            let isPlain = EnvelopeParser.parsePlainResult(raw, intoFresh: &envelope, result: &payloads.result)
                || (hooks != nil && parsePlainRequest(raw, into: &envelope, params: &payloads.params))
            if !isPlain, let failure = EnvelopeParser.parse(raw, intoFresh: &envelope, decoding: &payloads) {
                // Contract section 1: answered with bad_request, with the id
                // when read; but a oneway request never gets an answer, not
                // even an error (section 2, and the daemon's documented choice).
                logger.warning("bad frame from the daemon: \(failure.error.message)")
                // Its descriptors, if it declares some, are claimed and so
                // closed: left queued, a line after it could take them.
                if let count = (try? JSONParser.parse(raw))?["fds"]?.intValue.flatMap({ Int(exactly: $0) }), count > 0 {
                    _ = takeDescriptors(count, for: line)
                }
                if failure.id == nil, Self.isOnewayRequest(raw) { return }
                enqueue(OutboundMessage.error(id: failure.id, failure.error))
                return
            }
            let descriptors: [OwnedDescriptor]
            switch takeDescriptors(envelope.fds, for: line) {
            case .descriptors(let claimed): descriptors = claimed
            case .mismatch(let declared, let arrived, let truncated):
                refuseMismatch(envelope, declared: declared, arrived: arrived, truncated: truncated)
                return
            }
            switch envelope.kind {
            case .response: receiveResponse(envelope, result: payloads.result, descriptors: descriptors, raw)
            case .request: receiveRequest(envelope, params: payloads.params, descriptors: descriptors, raw)
            case .event: receiveEvent(envelope, data: payloads.data)
            }
        }
    }

    /// A message whose descriptors are not the ones it declares (they are
    /// closed already): its call fails, or its request is answered,
    /// with `bad_request`.
    private func refuseMismatch(_ envelope: Envelope, declared: Int, arrived: Int, truncated: Bool) {
        let what = truncated ? "more than this process could take" : "\(arrived)"
        let error = MediatorError(.badRequest, "the message declared \(declared) descriptors (\"fds\") but \(what) came with it")
        logger.warning("\(error.message)")
        switch envelope.kind {
        case .response:
            guard case .int(let id)? = envelope.id, let waiter = pending.cancel(id) else { return }
            waiter.fail(error)
            if envelope.continues { enqueue(Self.cancelFrame(id)) }
        case .request:
            if let id = envelope.id { enqueue(OutboundMessage.error(id: id, error)) }
        case .event:
            break
        }
    }

    /// Whether a refused frame is still a JSON object with `target` or
    /// `action` and no `id`: a oneway request.
    private static func isOnewayRequest(_ raw: UnsafeRawBufferPointer) -> Bool {
        guard let members = (try? JSONParser.parse(raw))?.objectValue, members["id"] == nil else { return false }
        return members["target"] != nil || members["action"] != nil
    }

    func receiveTooLarge() {
        logger.error("discarded a frame over the limit of \(maxInboundFrameBytes) bytes")
        enqueue(
            OutboundMessage.error(
                id: nil, MediatorError(.frameTooLarge, "frame over the limit of \(maxInboundFrameBytes) bytes")))
    }

    private static func decode(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>?) -> JSONValue? {
        guard let range, range.lowerBound >= 0, range.upperBound <= raw.count else { return nil }
        return try? JSONParser.parse(UnsafeRawBufferPointer(rebasing: raw[range]))
    }

    private static func bytes(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>?) -> [UInt8]? {
        guard let range, range.lowerBound >= 0, range.upperBound <= raw.count else { return nil }
        return Array(UnsafeRawBufferPointer(rebasing: raw[range]))
    }

    func receiveResponse(
        _ envelope: Envelope, result: JSONValue?, descriptors: [OwnedDescriptor], _ raw: UnsafeRawBufferPointer
    ) {
        guard case .int(let id)? = envelope.id else {
            if let error = Self.decode(raw, envelope.errorRange).flatMap(MediatorError.init(json:)) {
                logger.warning("the daemon answered a frame without id: \(error)")
            } else {
                logger.debug("response with an id this client never uses: \(envelope.id?.description ?? "null")")
            }
            return
        }
        var error: MediatorError?
        if envelope.errorRange != nil {
            error = Self.decode(raw, envelope.errorRange).flatMap(MediatorError.init(json:))
                ?? MediatorError(.internal, "unreadable error response")
        }
        // The result as the waiter wants it: a JSONValue, or its text.
        func value() -> JSONValue { result ?? .null }
        if !descriptors.isEmpty, let refusal = refusal(ofReplyDescriptors: descriptors.count, to: id, result: value()) {
            for descriptor in descriptors { try? descriptor.close() }
            guard let waiter = pending.cancel(id) else { return }
            waiter.fail(refusal)
            if envelope.continues { enqueue(Self.cancelFrame(id)) }
            return
        }
        func reply() -> MediatorReply { MediatorReply(result: value(), descriptors: descriptors.map(OwnedFileDescriptor.init)) }
        switch pending.deliver(id, continues: envelope.continues && error == nil) {
        case .unknown:
            logger.debug("response to an id not in flight", metadata: ["id": "\(id)"])
        case .partial(.stream(let continuation)):
            continuation.yield(value())
        case .partial(.markedStream(let continuation)):
            continuation.yield(StreamItem(value: value(), isFinal: false))
        case .partial(.replyStream(let continuation)):
            continuation.yield(reply())
        case .partial(.markedReplyStream(let continuation)):
            continuation.yield(StreamItem(value: value(), isFinal: false, descriptors: reply().descriptors))
        case .partial(.call), .partial(.encodedCall), .partial(.reply):
            break  // PendingCalls hands back only streams as partial
        case .final(.markedStream(let continuation)):
            if let error {
                continuation.finish(throwing: error)
            } else {
                continuation.yield(StreamItem(value: value(), isFinal: true))
                continuation.finish()
            }
        case .final(.markedReplyStream(let continuation)):
            if let error {
                continuation.finish(throwing: error)
            } else {
                continuation.yield(StreamItem(value: value(), isFinal: true, descriptors: reply().descriptors))
                continuation.finish()
            }
        case .final(.call(let continuation)):
            continuation.resume(returning: error.map { .failure($0) } ?? .success(value()))
        case .final(.encodedCall(let continuation)):
            continuation.resume(returning: error.map { .failure($0) } ?? .success(Self.text(raw, envelope.resultRange)))
        case .final(.stream(let continuation)):
            if let error {
                continuation.finish(throwing: error)
            } else {
                continuation.yield(value())
                continuation.finish()
            }
        case .final(.reply(let continuation)):
            continuation.resume(returning: error.map { .failure($0) } ?? .success(reply()))
        case .final(.replyStream(let continuation)):
            if let error {
                continuation.finish(throwing: error)
            } else {
                continuation.yield(reply())
                continuation.finish()
            }
        }
    }

    /// Why the `count` descriptors of a response to `id` cannot be taken:
    /// this connection did not say `"fds": true`, the call was not made to
    /// receive descriptors (``MediatorClient/call(target:action:params:descriptors:timeout:)``),
    /// or the result refers to one that did not come; nil when they can.
    private func refusal(ofReplyDescriptors count: Int, to id: Int64, result: JSONValue) -> MediatorError? {
        guard acceptsDescriptors, pending.acceptsDescriptors(id) else {
            return MediatorError(
                .fdsNotSupported,
                "the response carried \(count) descriptors, and the call did not ask for them (connect with fds: true and call with descriptors:)")
        }
        do {
            _ = try FileDescriptorReferences.indexes(in: result, fds: count, root: "result")
            return nil
        } catch {
            return error
        }
    }

    /// A member's JSON text as it arrived (`null` when absent).
    private static func text(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>?) -> [UInt8] {
        guard let range, range.lowerBound >= 0, range.upperBound <= raw.count else { return Array("null".utf8) }
        return Array(UnsafeRawBufferPointer(rebasing: raw[range]))
    }

    func receiveRequest(
        _ envelope: Envelope, params: JSONValue?, descriptors: [OwnedDescriptor], _ raw: UnsafeRawBufferPointer
    ) {
        if !descriptors.isEmpty, !acceptsDescriptors || hooks == nil {
            for descriptor in descriptors { try? descriptor.close() }
            if let id = envelope.id {
                enqueue(OutboundMessage.error(
                    id: id, MediatorError(.fdsNotSupported, "this connection did not say it accepts descriptors (\"fds\": true)")))
            }
            return
        }
        guard let hooks else {
            if let id = envelope.id {
                enqueue(
                    OutboundMessage.error(
                        id: id,
                        MediatorError(.targetNotFound, "no component on this connection serves \"\(envelope.target)\"")))
            }
            return
        }
        var request = IncomingRequest(
            id: envelope.id, target: envelope.target, action: envelope.action,
            params: params ?? .object([:]),
            timeoutMs: envelope.timeoutMs, more: envelope.more,
            callerText: Self.bytes(raw, envelope.callerRange),
            descriptors: descriptors.map(OwnedFileDescriptor.init))
        if let range = envelope.traceparentRange {
            request.trace = TraceMembers(
                traceparent: Self.decode(raw, range)?.stringValue,
                tracestate: envelope.tracestateRange.flatMap { Self.decode(raw, $0)?.stringValue })
        }
        hooks.request(request, self)
    }

    func receiveEvent(_ envelope: Envelope, data: JSONValue?) {
        if envelope.event == "mediator.cancel" {
            // Control for a component, not for subscribers.
            if let hooks, let idValue = data?["id"], let id = MessageID(json: idValue) {
                hooks.cancel(id)
            } else {
                logger.debug("mediator.cancel ignored: \(data?.jsonText ?? "no data")")
            }
            return
        }
        if envelope.event == "mediator.stop", let hooks {
            hooks.stopRequested()
            return
        }
        // The daemon's events about itself: acted on here, and still given
        // to the subscribers whose patterns match.
        if envelope.event == DaemonEventName.restarting {
            daemonRestarting.store(true, ordering: .relaxed)
        } else if envelope.event == DaemonEventName.reregister {
            // The daemon that had them is gone: their answers never come.
            let lost = MediatorError(.componentUnavailable, "mediatord restarted and lost the call (mediator.reregister)")
            for waiter in pending.takeAll() { waiter.fail(lost) }
            subscribeAgain()
            hooks?.reregisterRequested()
        }
        subscriptions.deliver(MediatorEvent(name: envelope.event, data: data))
    }

    /// After `mediator.reregister`: every pattern held again, oneway, so
    /// that nothing waits on this thread for the answer.
    private func subscribeAgain() {
        let patterns = subscriptions.patterns
        guard !patterns.isEmpty else { return }
        do {
            try sendOneway(ProtocolConstants.daemonTarget, "subscribe", params: ["events": .array(patterns.map(JSONValue.string))])
        } catch {
            logger.debug("cannot subscribe again: \(error)")  // the connection is going: the reconnect subscribes
        }
    }

    /// A short reason for a connection failure.
    static func describe(_ error: SocketError) -> String {
        switch error {
        case .system(_, let code): return String(cString: strerror(code))
        case .pathTooLong: return "the socket path is too long"
        default: return "\(error)"
        }
    }
}
