import MediatorProtocol
import Testing

@testable import MediatorDaemon

#if canImport(Glibc)
import Glibc
#endif

/// The memfd a re-exec hands to the new image (docs/daemon.md, "Re-exec in place").
@Suite("Re-exec hand-over: byte form and memfd")
struct ReexecHandOverTests {
    static func sample() -> ReexecHandOver {
        ReexecHandOver(
            descriptors: [
                .init(fd: 5, role: .listener), .init(fd: 7, role: .connection, connection: 3), .init(fd: 9, role: .carried),
            ],
            host: HostHandOverState(
                boundPath: "/run/m.sock", advertisedPath: "/run/m.sock",
                requesters: [.init(connection: 3, idBytes: Array(#""r-1""#.utf8)), .init(connection: 4, idBytes: nil)],
                descriptors: DescriptorTable.HandOver(received: 12, released: 2, queuedToward: [3: [(1000, 1), (0, 2)]]),
                reexecs: 4,
                processes: [.init(spawnID: 2, target: "Notes", pid: 4242, stdout: 11, stderr: nil)]),
            broker: Array(#"{"kind":"mediatord-broker-snapshot"}"#.utf8), sockets: [0x4D, 0x00, 0x0A, 0xFF])
    }

    @Test func readBackAsWritten() throws {
        let handOver = Self.sample()
        let decoded = try ReexecHandOver.decode(handOver.encoded())
        #expect(decoded.descriptors == handOver.descriptors)
        #expect(decoded.host == handOver.host)
        #expect(decoded.broker == handOver.broker)
        #expect(decoded.sockets == handOver.sockets, "raw bytes, LF and all")
    }

    @Test func anotherVersionIsRefusedButItsDescriptorsAreStillFound() {
        let text = String(decoding: Self.sample().encoded(), as: UTF8.self)
        let newer = Array(text.replacingOccurrences(of: #""version":1"#, with: #""version":2"#).utf8)
        #expect(throws: ReexecError.unsupportedVersion(2)) { try ReexecHandOver.decode(newer) }
        #expect(ReexecHandOver.descriptors(in: newer) == Self.sample().descriptors)
    }

    @Test func whatDoesNotHoldTogetherIsRefused() {
        let bytes = Self.sample().encoded()
        #expect(throws: ReexecError.self) { try ReexecHandOver.decode(Array(bytes.dropLast())) }
        #expect(throws: ReexecError.self) { try ReexecHandOver.decode(bytes + [1]) }
        #expect(throws: ReexecError.self) { try ReexecHandOver.decode(Array(#"{"kind":"other","version":1}"#.utf8) + [0x0A]) }
        #expect(throws: ReexecError.self) { try ReexecHandOver.decode(Array("no header line".utf8)) }
        #expect(ReexecHandOver.descriptors(in: Array("[1]\n".utf8)) == nil)
    }

    @Test func theMemfdIsSealedAndReadBack() throws {
        let bytes = Self.sample().encoded()
        let fd = try SealedMemfd.create(bytes, name: "reexec-test")
        defer { close(fd) }
        #expect(try SealedMemfd.read(fd, limit: 1 << 20) == bytes)
        #expect(throws: ReexecError.self) { try SealedMemfd.read(fd, limit: 10) }
        // Sealed: it cannot be written any more.
        #expect(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, 1, 0) } == -1)
        // An unsealed file is refused.
        var pipeEnds: [Int32] = [-1, -1]
        #expect(pipe(&pipeEnds) == 0)
        defer { close(pipeEnds[0]); close(pipeEnds[1]) }
        #expect(throws: ReexecError.self) { try SealedMemfd.read(pipeEnds[0], limit: 1 << 20) }
    }
}
