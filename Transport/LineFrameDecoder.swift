import MediatorProtocol
import NIOCore

/// One inbound line from a peer, or the news that a line was over the limit.
public enum InboundLine: Sendable {
    case frame(ByteBuffer)
    case tooLarge
}

/// The user inbound event ``LineFrameDecoder`` fires for a line over the
/// limit (the line itself is discarded).
public struct LineTooLarge: Sendable, Hashable {
    public init() {}
}

/// Cuts the inbound byte stream into lines with an exact size limit.
///
/// NIO's `ByteToMessageHandler(maximumBufferSize:)` only checks while waiting
/// for more data, so a long line arriving in one read would pass it; the
/// ``LineFramer`` counts every byte up to the LF instead.
///
/// Each line goes on as a `ByteBuffer` (without its LF): NIOAny holds one
/// without boxing, where any other type costs an allocation and a dynamic
/// cast per frame. A line over the limit is a ``LineTooLarge`` user event.
public struct LineFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = ByteBuffer

    private var framer: LineFramer

    public init(maxFrameBytes: Int) {
        framer = LineFramer(maxFrameBytes: maxFrameBytes)
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let step = buffer.withUnsafeReadableBytes { framer.next($0) }
        switch step {
        case .frame(let start, let length, let consumed):
            let frame = buffer.getSlice(at: buffer.readerIndex + start, length: length)
            buffer.moveReaderIndex(forwardBy: consumed)
            if let frame { context.fireChannelRead(wrapInboundOut(frame)) }
            return .continue
        case .tooLarge(let consumed):
            buffer.moveReaderIndex(forwardBy: consumed)
            context.fireUserInboundEventTriggered(LineTooLarge())
            return .continue
        case .needMore(let consumed):
            buffer.moveReaderIndex(forwardBy: consumed)
            return .needMoreData
        }
    }

    public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A last line without LF is incomplete: drop it, as the peer is gone.
        while try decode(context: context, buffer: &buffer) == .continue {}
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }
}
