import Logging
import MediatorProtocol
import MediatorTransport
import NIOCore

/// The per-connection channel handler: hands each inbound line to the host
/// (which handles it or queues it for fair dispatch), and tells it when a read
/// cycle ends (the time to flush) or the connection goes.
final class PeerHandler: ChannelInboundHandler {
    typealias InboundIn = InboundLine

    private let host: BrokerHost
    private let credentials: PeerCredentials
    private var connection: ConnectionID?

    init(host: BrokerHost, credentials: PeerCredentials) {
        self.host = host
        self.credentials = credentials
    }

    func channelActive(context: ChannelHandlerContext) {
        guard let id = host.open(context.channel, credentials: credentials) else {
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
        guard let connection else { return }
        host.received(unwrapInboundIn(data), from: connection, uid: credentials.uid)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        host.flush()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        guard let connection else { return }
        if context.channel.isWritable { host.recheckBacklog(connection) } else { host.outboundLimitReached(connection) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let connection { host.closed(connection) }
        connection = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        host.logger.debug("connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}
