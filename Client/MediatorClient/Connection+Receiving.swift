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
import MediatorTransport
import NIOCore
import NIOPosix

/// Inbound traffic, on the event loop: responses to our calls, requests for
/// a component, events.
extension Connection {
    // MARK: - Receiving (on the event loop)

    func receive(_ frame: ByteBuffer) {
        frame.withUnsafeReadableBytes { raw in
            // Written in place: an envelope is some 200 bytes, copied at
            // each level when handed back in a Result.
            var envelope = Envelope(kind: .request)
            var payloads = EnvelopeParser.Payloads()
            if let failure = EnvelopeParser.parse(raw, into: &envelope, decoding: &payloads) {
                // Contract section 1: answered with bad_request, with the id
                // when read; but a oneway request never gets an answer, not
                // even an error (section 2, and the daemon's documented choice).
                logger.warning("bad frame from the daemon: \(failure.error.message)")
                if failure.id == nil, Self.isOnewayRequest(raw) { return }
                enqueue(OutboundMessage.error(id: failure.id, failure.error))
                return
            }
            switch envelope.kind {
            case .response: receiveResponse(envelope, result: payloads.result, raw)
            case .request: receiveRequest(envelope, params: payloads.params, raw)
            case .event: receiveEvent(envelope, data: payloads.data)
            }
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

    func receiveResponse(_ envelope: Envelope, result: JSONValue?, _ raw: UnsafeRawBufferPointer) {
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
        switch pending.deliver(id, continues: envelope.continues && error == nil) {
        case .unknown:
            logger.debug("response to an id not in flight", metadata: ["id": "\(id)"])
        case .partial(.stream(let continuation)):
            continuation.yield(value())
        case .partial(.markedStream(let continuation)):
            continuation.yield(StreamItem(value: value(), isFinal: false))
        case .partial(.call), .partial(.encodedCall):
            break  // PendingCalls hands back only streams as partial
        case .final(.markedStream(let continuation)):
            if let error {
                continuation.finish(throwing: error)
            } else {
                continuation.yield(StreamItem(value: value(), isFinal: true))
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
        }
    }

    /// A member's JSON text as it arrived (`null` when absent).
    private static func text(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>?) -> [UInt8] {
        guard let range, range.lowerBound >= 0, range.upperBound <= raw.count else { return Array("null".utf8) }
        return Array(UnsafeRawBufferPointer(rebasing: raw[range]))
    }

    func receiveRequest(_ envelope: Envelope, params: JSONValue?, _ raw: UnsafeRawBufferPointer) {
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
            callerText: Self.bytes(raw, envelope.callerRange))
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
        subscriptions.deliver(MediatorEvent(name: envelope.event, data: data))
    }

    /// A short reason for a connection failure.
    static func describe(_ error: any Error) -> String {
        if let error = error as? IOError {
            return String(cString: strerror(error.errnoCode))
        }
        if let error = error as? SocketAddressError {
            switch error {
            case .unixDomainSocketPathTooLong: return "the socket path is too long"
            default: return "\(error)"
            }
        }
        return "\(error)"
    }
}

/// Cuts the bytes read into lines (``LineFramer``, the exact frame limit)
/// and feeds each to the connection; the only handler in the pipeline,
/// lives on the event loop.
///
/// It frames lines itself, as the daemon's `PeerHandler` does, rather than
/// behind a `ByteToMessageHandler`: a line then costs a function call, not a
/// trip through the pipeline and the decoder's buffer management.
final class InboundHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let connection: Connection
    private var framer: LineFramer
    /// The start of a line whose end has not arrived; nil when none.
    private var partial: ByteBuffer?

    init(_ connection: Connection, maxFrameBytes: Int) {
        self.connection = connection
        self.framer = LineFramer(maxFrameBytes: maxFrameBytes)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        connection.readBatch.wrappingAdd(1, ordering: .relaxed)
        connection.beginRead()
        defer { connection.endRead(context) }
        var bytes = Self.unwrapInboundIn(data)
        if var earlier = partial {
            partial = nil
            earlier.writeBuffer(&bytes)
            bytes = earlier
        }
        while true {
            switch bytes.withUnsafeReadableBytes({ framer.next($0) }) {
            case .frame(let start, let length, let consumed):
                let frame = bytes.getSlice(at: bytes.readerIndex + start, length: length)
                bytes.moveReaderIndex(forwardBy: consumed)
                if let frame { connection.receive(frame) }
            case .tooLarge(let consumed):
                bytes.moveReaderIndex(forwardBy: consumed)
                connection.receiveTooLarge()
            case .needMore(let consumed):
                bytes.moveReaderIndex(forwardBy: consumed)
                if bytes.readableBytes > 0 { partial = bytes }
                return
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        connection.writabilityChanged()
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.didClose()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        connection.logger.debug("connection error: \(error)")
        context.close(promise: nil)
    }
}
