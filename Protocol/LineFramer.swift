/// Splits a byte stream into LF-terminated frames with an exact size limit.
///
/// The limit counts the frame's bytes without its terminator (`\n` or
/// `\r\n`). A longer frame is reported once, then discarded up to the next
/// LF, and the stream goes on. Empty lines are skipped, and so are blank
/// ones (only spaces and tabs, before the LF or CR LF). The framer keeps how
/// far it has already looked, so each byte is scanned once however the
/// stream is chunked.
public struct LineFramer: Sendable {
    /// What ``next(_:)`` found in the pending bytes.
    public enum Step: Equatable, Sendable {
        /// A frame occupies `bytes[start..<start+length]`; drop `consumed`
        /// bytes (skipped empty lines, frame and terminator) before the next call.
        case frame(start: Int, length: Int, consumed: Int)
        /// A frame over the limit began; drop `consumed` bytes. Reported once
        /// per oversized frame.
        case tooLarge(consumed: Int)
        /// No complete frame: drop `consumed` bytes (skipped or discarded
        /// ones) and call again when more bytes arrive.
        case needMore(consumed: Int)
    }

    /// The largest frame accepted, without its terminator.
    public let maxFrameBytes: Int
    /// How many leading bytes of the pending data are known to hold no LF.
    private var scanned = 0
    private var discarding = false

    /// A framer with nothing scanned yet.
    public init(maxFrameBytes: Int) {
        self.maxFrameBytes = maxFrameBytes
    }

    /// Looks at the pending bytes (everything not yet consumed).
    public mutating func next(_ bytes: UnsafeRawBufferPointer) -> Step {
        var offset = 0
        while true {
            let searchFrom = offset + scanned
            var newline: Int?
            var index = searchFrom
            // Eight bytes at a time, then the last few byte by byte.
            while index + WordScan.width <= bytes.count {
                if let offset = WordScan.first(0x0A, in: WordScan.word(bytes, at: index)) {
                    newline = index + offset
                    break
                }
                index += WordScan.width
            }
            if newline == nil {
                while index < bytes.count {
                    if bytes[index] == 0x0A {
                        newline = index
                        break
                    }
                    index += 1
                }
            }
            guard let lf = newline else {
                let pending = bytes.count - offset
                if discarding {
                    scanned = 0
                    return .needMore(consumed: bytes.count)
                }
                // Over the limit even if a CR ends it: too large already.
                let last = pending > 0 ? bytes[bytes.count - 1] : 0
                if pending > maxFrameBytes + 1 || (pending == maxFrameBytes + 1 && last != 0x0D) {
                    discarding = true
                    scanned = 0
                    return .tooLarge(consumed: bytes.count)
                }
                scanned = pending
                return .needMore(consumed: offset)
            }
            scanned = 0
            var length = lf - offset
            if length > 0, bytes[lf - 1] == 0x0D { length -= 1 }
            if discarding {
                discarding = false
                offset = lf + 1
                if offset == bytes.count { return .needMore(consumed: offset) }
                continue
            }
            if length > maxFrameBytes {
                return .tooLarge(consumed: lf + 1)
            }
            if length == 0 || Self.isBlank(bytes, from: offset, count: length) {
                offset = lf + 1
                continue
            }
            return .frame(start: offset, length: length, consumed: lf + 1)
        }
    }

    /// Whether the line of `count` bytes at `start` holds only spaces and
    /// tabs. A JSON line starts with `{`, so the first byte settles it for
    /// every ordinary line and the rest is read only for a line that starts blank.
    @inline(__always)
    private static func isBlank(_ bytes: UnsafeRawBufferPointer, from start: Int, count: Int) -> Bool {
        guard isSpaceOrTab(bytes[start]) else { return false }
        var index = start + 1
        let end = start + count
        while index < end {
            guard isSpaceOrTab(bytes[index]) else { return false }
            index += 1
        }
        return true
    }

    @inline(__always)
    private static func isSpaceOrTab(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09
    }
}
