import NIOCore

/// Copies the pieces of one outbound line into space reserved for it (one
/// `ByteBuffer.writeWithUnsafeMutableBytes`), so that a line written for
/// every call costs one capacity check, not one per piece.
///
/// The caller reserves enough: the fixed text, the pieces' byte counts and
/// ``maxDecimalBytes`` per number. Each append checks that it fits, so a
/// wrong reservation stops the daemon rather than writing past the space.
struct LineComposer {
    /// The longest decimal an `Int64` needs (`-9223372036854775808`).
    static let maxDecimalBytes = 20

    private let space: UnsafeMutableRawBufferPointer
    private(set) var count = 0

    init(_ space: UnsafeMutableRawBufferPointer) {
        self.space = space
    }

    @inline(__always)
    private mutating func append(_ bytes: UnsafeRawBufferPointer) {
        let length = bytes.count
        precondition(count + length <= space.count, "LineComposer: reservation too small")
        guard let source = bytes.baseAddress, let target = space.baseAddress else { return }
        let destination = target + count
        // Most pieces are short (`"id":`, a comma and a quote, a name): two
        // words that may overlap, or a few bytes, cost less than a call to
        // memcpy, which a line of nine pieces made nine times.
        if length >= 8 && length <= 16 {
            let head = source.loadUnaligned(as: UInt64.self)
            let tail = source.loadUnaligned(fromByteOffset: length - 8, as: UInt64.self)
            destination.storeBytes(of: head, as: UInt64.self)
            (destination + (length - 8)).storeBytes(of: tail, as: UInt64.self)
        } else if length < 8 {
            for index in 0..<length {
                destination.storeBytes(of: source.load(fromByteOffset: index, as: UInt8.self), toByteOffset: index, as: UInt8.self)
            }
        } else {
            destination.copyMemory(from: source, byteCount: length)
        }
        count += length
    }

    // Inlined: a literal's length is then a constant, and its copy a few moves.
    @inline(__always)
    mutating func append(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    mutating func append(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { append($0) }
    }

    /// The trace members, each after a comma (they follow other members).
    mutating func append(_ trace: ForwardedTrace) {
        append(",\"traceparent\":")
        append(trace.traceparent)
        if let tracestate = trace.tracestate {
            append(",\"tracestate\":")
            append(tracestate)
        }
    }

    /// Text that needs no escaping (see ``FrameWriter/isPlain(_:)``).
    mutating func append(plain text: String) {
        var text = text
        text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    mutating func append(decimal value: Int64) {
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes, filled from the end
        withUnsafeMutableBytes(of: &scratch) { digits in
            var magnitude = value.magnitude
            var index = digits.count
            repeat {
                index -= 1
                digits[index] = UInt8(truncatingIfNeeded: magnitude % 10) + 0x30
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                index -= 1
                digits[index] = UInt8(ascii: "-")
            }
            append(UnsafeRawBufferPointer(rebasing: digits[index...]))
        }
    }
}
