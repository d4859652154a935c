import Logging
import MediatorProtocol
import MediatorTransport
import NIOCore

/// The per-connection channel handler, the only one in the pipeline: cuts
/// the bytes read into lines (``LineFramer``, the exact frame limit) and
/// hands each to the host (which handles it or queues it for fair dispatch),
/// and tells it when a read cycle ends or the connection goes. Writes are
/// flushed at the end of the loop iteration (``LoopTickEnd``), or sooner
/// when they have waited a while (``BrokerHost/flushDelay``).
///
/// It frames lines itself rather than behind a `ByteToMessageHandler`: each
/// line then costs a function call, not a trip through the pipeline with its
/// value boxed in an `NIOAny`, and an idle connection holds no buffer at all.
final class PeerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let host: BrokerHost
    private let credentials: PeerCredentials
    /// Kept apart: reading it from `credentials` for every line copies them.
    private let uid: UInt32
    private var connection: ConnectionID?
    private var framer: LineFramer
    /// The start of a line whose end has not arrived; nil when none.
    private var partial: ByteBuffer?

    init(host: BrokerHost, credentials: PeerCredentials, maxFrameBytes: Int) {
        self.host = host
        self.credentials = credentials
        self.uid = credentials.uid
        self.framer = LineFramer(maxFrameBytes: maxFrameBytes)
    }

    func channelActive(context: ChannelHandlerContext) {
        guard let id = host.open(context, credentials: credentials) else {
            // Over the connection limit: one line saying so, then close.
            host.logger.warning("connection refused: limit reached", metadata: ["pid": "\(credentials.pid)", "uid": "\(credentials.uid)"])
            let error = host.takeRefusal(for: context.channel)
                ?? MediatorError(.overloaded, "mediatord has reached its limit of \(host.broker.configuration.maxConnections) connections")
            let line = OutboundMessage.error(id: nil, error)
            var buffer = context.channel.allocator.buffer(capacity: line.count)
            buffer.writeBytes(line)
            let channel = context.channel
            context.writeAndFlush(NIOAny(buffer)).whenComplete { _ in channel.close(promise: nil) }
            return
        }
        connection = id
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard connection != nil else { return }
        var bytes = unwrapInboundIn(data)
        if var earlier = partial {
            partial = nil
            earlier.writeBuffer(&bytes)
            bytes = earlier
        }
        while let connection {
            // `connection` turns nil when a line's effects closed the channel: the rest is dropped.
            switch bytes.withUnsafeReadableBytes({ framer.next($0) }) {
            case .frame(let start, let length, let consumed):
                let frame = bytes.getSlice(at: bytes.readerIndex + start, length: length)
                bytes.moveReaderIndex(forwardBy: consumed)
                if let frame { host.received(.frame(frame), from: connection, uid: uid) }
            case .tooLarge(let consumed):
                bytes.moveReaderIndex(forwardBy: consumed)
                host.received(.tooLarge, from: connection, uid: uid)
            case .needMore(let consumed):
                bytes.moveReaderIndex(forwardBy: consumed)
                if bytes.readableBytes > 0 { partial = bytes }
                return
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        host.readCycleEnded()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        guard let connection else { return }
        if context.channel.isWritable { host.recheckBacklog(connection) } else { host.outboundLimitReached(connection) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // A last line without LF is incomplete: dropped, as the peer is gone.
        partial = nil
        if let connection { host.closed(connection) }
        connection = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        host.logger.debug("connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}
