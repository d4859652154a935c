import NIOConcurrencyHelpers
import Foundation
import MediatorProtocol
import MediatorTransport
import NIOCore
import NIOPosix

@testable import MediatorClient

/// One connection to the fake daemon.
final class FakePeer: Sendable, Hashable, CustomStringConvertible {
    let channel: any Channel
    let number: Int

    init(channel: any Channel, number: Int) {
        self.channel = channel
        self.number = number
    }

    func send(_ value: JSONValue) {
        channel.writeAndFlush(ByteBuffer(bytes: OutboundMessage.line(value)), promise: nil)
    }

    func sendRaw(_ text: String) {
        channel.writeAndFlush(ByteBuffer(string: text), promise: nil)
    }

    func close() async {
        try? await channel.close()
    }

    static func == (lhs: FakePeer, rhs: FakePeer) -> Bool { lhs === rhs }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    var description: String { "peer \(number)" }
}

/// A message the fake daemon received.
struct Received: Sendable {
    var peer: FakePeer
    var message: JSONValue

    var action: String? { message["action"]?.stringValue }
    var target: String? { message["target"]?.stringValue }
    var id: JSONValue? { message["id"] }
}

/// What the fake does with a message; `standard` answers the daemon's own
/// actions and the target `Echo`.
typealias FakeBehavior = @Sendable (FakeDaemon.Core, FakePeer, JSONValue) -> Void

/// A small stand-in for `mediatord` on a temporary Unix socket: it records
/// every message it receives and answers per its behavior.
final class FakeDaemon: Sendable {
    final class Core: Sendable {
        let received = Mailbox<Received>()
        let behavior: FakeBehavior
        private let peers = NIOLockedValueBox<[Int: FakePeer]>([:])
        private let counter = NIOLockedValueBox(0)
        /// Free state for behaviors.
        let held = NIOLockedValueBox<[Received]>([])

        init(behavior: @escaping FakeBehavior) {
            self.behavior = behavior
        }

        fileprivate func added(_ channel: any Channel) -> FakePeer {
            let number = counter.withLockedValue { counter in
                counter += 1
                return counter
            }
            let peer = FakePeer(channel: channel, number: number)
            peers.withLockedValue { $0[number] = peer }
            return peer
        }

        fileprivate func removed(_ peer: FakePeer) {
            peers.withLockedValue { $0[peer.number] = nil }
        }

        var allPeers: [FakePeer] { peers.withLockedValue { Array($0.values) } }
    }

    let path: String
    let core: Core
    private let server: any Channel

    var received: Mailbox<Received> { core.received }

    private init(path: String, core: Core, server: any Channel) {
        self.path = path
        self.core = core
        self.server = server
    }

    static func start(path: String = temporarySocketPath(), behavior: @escaping FakeBehavior = FakeDaemon.standard)
        async throws -> FakeDaemon
    {
        let core = Core(behavior: behavior)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(
                        ByteToMessageHandler(LineFrameDecoder(maxFrameBytes: 1 << 20)),
                        FakeHandler(core: core))
                }
            }
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true)
            .get()
        return FakeDaemon(path: path, core: core, server: server)
    }

    /// Stops listening and closes every connection.
    func stop() async {
        try? await server.close()
        for peer in core.allPeers { await peer.close() }
    }

    /// Stops and removes the socket file.
    func shutdown() async {
        await stop()
        unlink(path)
    }

    /// Answers the daemon's own actions and the target `Echo`:
    /// `echo` returns its params, `hang` never answers.
    static func standard(_ core: Core, _ peer: FakePeer, _ message: JSONValue) {
        _ = answerStandard(core, peer, message)
    }

    /// The standard answers; false when the message is not one of them.
    static func answerStandard(_ core: Core, _ peer: FakePeer, _ message: JSONValue) -> Bool {
        guard let target = message["target"]?.stringValue, let action = message["action"]?.stringValue else {
            return false
        }
        let id = message["id"]
        let params = message["params"] ?? .object([:])
        func answer(_ result: JSONValue) {
            guard let id else { return }
            peer.send(["id": id, "result": result])
        }
        func fail(_ code: String, _ text: String) {
            guard let id else { return }
            peer.send(["id": id, "error": ["code": .string(code), "message": .string(text)]])
        }
        switch (target, action) {
        case ("mediator", "hello"):
            answer([
                "protocol": 1, "server": "fake", "version": "0", "max_frame": .int(1 << 20),
                "connection": .int(Int64(peer.number)),
            ])
        case ("mediator", "register"):
            answer(["target": params["target"] ?? .null, "instance": .int(Int64(peer.number))])
        case ("mediator", "ping"), ("mediator", "subscribe"), ("mediator", "unsubscribe"), ("mediator", "cancel"):
            answer([:])
        case ("mediator", "publish"):
            answer(["delivered": 3])
        case ("mediator", "list"):
            answer(["targets": []])
        case ("Echo", "echo"):
            answer(params)
        case ("Echo", "hang"):
            break
        default:
            fail("target_not_found", "no component serves target \"\(target)\"")
        }
        return true
    }
}

private final class FakeHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let core: FakeDaemon.Core
    private var peer: FakePeer?

    init(core: FakeDaemon.Core) {
        self.core = core
    }

    func channelActive(context: ChannelHandlerContext) {
        peer = core.added(context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let peer { core.removed(peer) }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let peer else { return }
        let frame = Self.unwrapInboundIn(data)
        guard let message = try? JSONParser.parse(frame.readableBytesView) else { return }
        core.received.post(Received(peer: peer, message: message))
        core.behavior(core, peer, message)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
