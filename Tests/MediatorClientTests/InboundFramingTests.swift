import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorClient

/// The client frames lines itself (InboundHandler): lines split over
/// several reads, several lines in one read, CR LF, blank lines, and a line
/// over the client's limit, which is dropped and reported to the daemon
/// without losing the stream.
@Suite("MediatorClient inbound framing")
struct InboundFramingTests {
    /// "Split"/"x" answers in pieces written apart; "Split"/"big" answers
    /// first with a line over 1 KiB, then with the real answer.
    static let behavior: FakeBehavior = { core, peer, message in
        guard message["target"] == "Split", let id = message["id"] else {
            FakeDaemon.standard(core, peer, message)
            return
        }
        let idText = id.jsonText
        switch message["action"]?.stringValue {
        case "x":
            let line = #"{"id":\#(idText),"result":{"n":1}}"# + "\r\n"
            let bytes = Array(line.utf8)
            peer.channel.writeAndFlush(ByteBuffer(bytes: bytes[..<7]), promise: nil)
            peer.channel.eventLoop.scheduleTask(in: .milliseconds(20)) {
                peer.channel.writeAndFlush(ByteBuffer(bytes: bytes[7...]), promise: nil)
            }
        case "two":
            // Two answers for one id in one write: the first counts, the
            // second is a response to an id no longer in flight.
            peer.sendRaw("\n  \n" + #"{"id":\#(idText),"result":"first"}"# + "\n" + #"{"id":\#(idText),"result":"second"}"# + "\n")
        case "big":
            let padding = String(repeating: "p", count: 2000)
            peer.sendRaw(#"{"id":\#(idText),"result":"\#(padding)"}"# + "\n" + #"{"id":\#(idText),"result":"small"}"# + "\n")
        default:
            break
        }
    }

    @Test func linesAcrossReadsAndSeveralInOneRead() async throws {
        let fake = try await FakeDaemon.start(behavior: Self.behavior)
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path, maxFrameBytes: 1024) }
        let split = try await withTimeout { try await client.call(target: "Split", action: "x") }
        #expect(split == ["n": 1])
        let two = try await withTimeout { try await client.call(target: "Split", action: "two") }
        #expect(two == "first")
        // The connection still works after both.
        let echoed = try await withTimeout { try await client.call(target: "Echo", action: "echo", params: ["k": "v"]) }
        #expect(echoed == ["k": "v"])
        await client.close()
    }

    @Test func aLineOverTheLimitIsDroppedAndReported() async throws {
        let fake = try await FakeDaemon.start(behavior: Self.behavior)
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path, maxFrameBytes: 1024) }
        let result = try await withTimeout { try await client.call(target: "Split", action: "big") }
        #expect(result == "small")
        let report = try await fake.received.first("the frame_too_large report") {
            $0.message["error"]?["code"] == "frame_too_large"
        }
        #expect(report.message["id"] == .null)
        await client.close()
    }
}
