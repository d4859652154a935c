import MediatorConfiguration
import Logging
import MediatorProtocol
import NIOCore
import NIOEmbedded
import Testing

@testable import MediatorDaemon

/// The daemon's channel handler frames lines itself (no `ByteToMessageHandler`):
/// lines split across reads, several in one read, CRLF, empty lines and the
/// exact frame limit, through a real ``BrokerHost`` on an embedded channel.
@Suite("PeerHandler: framing")
struct PeerHandlerTests {
    static let maxFrameBytes = 64

    /// A host and one connected embedded channel with the handler.
    func connected() throws -> (EmbeddedChannel, BrokerHost) {
        let loop = EmbeddedEventLoop()
        var logger = Logger(label: "peer-handler-tests")
        logger.logLevel = .critical
        var configuration = DaemonConfiguration()
        configuration.maxFrameBytes = Self.maxFrameBytes
        let host = BrokerHost(eventLoop: loop, broker: Broker(configuration: configuration, logger: logger), logger: logger)
        let channel = EmbeddedChannel(loop: loop)
        let credentials = PeerCredentials(pid: 4101, uid: 0, gid: 0)
        try channel.pipeline.syncOperations.addHandler(
            PeerHandler(host: host, credentials: credentials, maxFrameBytes: Self.maxFrameBytes))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/tmp/peer-handler-test")).wait()
        return (channel, host)
    }

    /// One read, then the end of the loop iteration (where the daemon flushes).
    func feed(_ peer: (EmbeddedChannel, BrokerHost), _ text: String) throws {
        try peer.0.writeInbound(ByteBuffer(string: text))
        (peer.0.eventLoop as? EmbeddedEventLoop)?.run()
        peer.1.flush()
    }

    /// Every line written to the peer so far, without the LF.
    func answers(_ peer: (EmbeddedChannel, BrokerHost)) throws -> [String] {
        var lines: [String] = []
        while let buffer = try peer.0.readOutbound(as: ByteBuffer.self) {
            let text = String(buffer: buffer)
            #expect(text.hasSuffix("\n"), "a line without its LF: \(text)")
            lines += text.split(separator: "\n").map(String.init)
        }
        return lines
    }

    func ping(_ id: Int) -> String { #"{"id":\#(id),"target":"mediator","action":"ping"}"# }

    @Test func aLineSplitAcrossReadsIsOneFrame() throws {
        let channel = try connected()
        let line = ping(1) + "\n"
        let bytes = Array(line.utf8)
        try feed(channel, String(decoding: bytes[0..<5], as: UTF8.self))
        try feed(channel, String(decoding: bytes[5..<30], as: UTF8.self))
        #expect(try answers(channel).isEmpty)
        try feed(channel, String(decoding: bytes[30...], as: UTF8.self))
        #expect(try answers(channel) == [#"{"id":1,"result":{}}"#])
    }

    @Test func severalLinesInOneReadCRLFAndEmptyLines() throws {
        let channel = try connected()
        try feed(channel, ping(1) + "\n\n" + ping(2) + "\r\n" + "\r\n" + ping(3) + "\n" + #"{"id":4,"#)
        #expect(try answers(channel) == [#"{"id":1,"result":{}}"#, #"{"id":2,"result":{}}"#, #"{"id":3,"result":{}}"#])
        try feed(channel, #""target":"mediator","action":"ping"}"# + "\n")
        #expect(try answers(channel) == [#"{"id":4,"result":{}}"#])
    }

    @Test func theFrameLimitIsExactAndTheStreamGoesOn() throws {
        let channel = try connected()
        // Padded with spaces (valid JSON whitespace) to exactly the limit, then one byte more.
        let exact = ping(5) + String(repeating: " ", count: Self.maxFrameBytes - ping(5).utf8.count)
        try feed(channel, exact + "\n")
        #expect(try answers(channel) == [#"{"id":5,"result":{}}"#])
        // One byte over, arriving in two reads; the line after it is still read.
        let over = exact + " \n"
        try feed(channel, String(over.prefix(40)))
        try feed(channel, String(over.dropFirst(40)) + ping(6) + "\n")
        let lines = try answers(channel)
        #expect(lines.count == 2)
        #expect(lines.first?.contains(#""code":"frame_too_large""#) == true, "\(lines)")
        #expect(lines.last == #"{"id":6,"result":{}}"#)
    }
}
