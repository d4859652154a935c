/// Tests on eight bytes at once (one 64-bit word), so that the scans every
/// message goes through (the framer's search for LF, the JSON string
/// scanner) step over plain bytes a word at a time instead of one by one.
/// Each test says exactly whether any of the eight bytes qualifies.
enum WordScan {
    static let width = 8
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The word at `offset` (any alignment).
    @inline(__always)
    static func word(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
    }

    /// Whether some byte of `word` is zero.
    @inline(__always)
    static func hasZeroByte(_ word: UInt64) -> Bool {
        (word &- ones) & ~word & highBits != 0
    }

    /// Whether some byte of `word` equals `byte`.
    @inline(__always)
    static func has(_ byte: UInt8, in word: UInt64) -> Bool {
        hasZeroByte(word ^ (ones &* UInt64(byte)))
    }

    /// Whether some byte of `word` would stop a JSON string scan: `"`, `\`,
    /// a control character (below 0x20) or a non-ASCII byte.
    @inline(__always)
    static func hasStringSpecial(_ word: UInt64) -> Bool {
        // With no high bit set, (w - 0x20 per byte) & ~w flags exactly the bytes below 0x20.
        word & highBits != 0 || (word &- ones &* 0x20) & ~word & highBits != 0
            || has(UInt8(ascii: "\""), in: word) || has(UInt8(ascii: "\\"), in: word)
    }
}
