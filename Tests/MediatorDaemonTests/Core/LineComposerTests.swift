import NIOCore
import Testing

@testable import MediatorDaemon

/// LineComposer copies short pieces without memcpy: every length, from
/// none to past the two-word copy, must land whole and in order.
@Suite("LineComposer")
struct LineComposerTests {
    @Test func piecesOfEveryLengthLandInOrder() {
        var expected: [UInt8] = []
        var pieces: [ByteBuffer] = []
        for length in 0...40 {
            let piece = (0..<length).map { UInt8(truncatingIfNeeded: 0x41 + (length * 7 + $0) % 26) }
            expected += piece
            pieces.append(ByteBuffer(bytes: piece))
        }
        var buffer = ByteBufferAllocator().buffer(capacity: expected.count + 20)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: expected.count + 20) { space in
            var composer = LineComposer(space)
            for piece in pieces { composer.append(piece) }
            composer.append(decimal: -1234)
            return composer.count
        }
        #expect(Array(buffer.readableBytesView) == expected + Array("-1234".utf8))
    }
}
