/// Tests on eight bytes at once (one 64-bit word), so that the scans every
/// message goes through (the framer's search for LF, the JSON string
/// scanner) step over plain bytes a word at a time instead of one by one.
///
/// Each test gives a mask with the high bit set in flagged bytes: (x - n
/// per byte) & ~x flags a byte below n (n <= 0x80; n = 1 finds zeros, so
/// x ^ c finds bytes equal to c). A borrow can only flag bytes above a true
/// match, so "any flag" is exact and so is the lowest flag: the offset of the
/// first matching byte.
enum WordScan {
    static let width = 8
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The word at `offset` (any alignment), its first byte in the low bits.
    @inline(__always)
    static func word(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    @inline(__always)
    private static func below(_ limit: UInt8, _ word: UInt64) -> UInt64 {
        (word &- ones &* UInt64(limit)) & ~word
    }

    @inline(__always)
    private static func equal(_ byte: UInt8, _ word: UInt64) -> UInt64 {
        below(1, word ^ (ones &* UInt64(byte)))
    }

    /// The offset of the first byte of `word` equal to `byte`; nil when none is.
    @inline(__always)
    static func first(_ byte: UInt8, in word: UInt64) -> Int? {
        offset(equal(byte, word))
    }

    /// The offset of the first byte of `word` that stops a JSON string scan:
    /// `"`, `\`, a control character (below 0x20) or a non-ASCII byte; nil when none does.
    @inline(__always)
    static func firstStringSpecial(in word: UInt64) -> Int? {
        offset(word | below(0x20, word) | equal(UInt8(ascii: "\""), word) | equal(UInt8(ascii: "\\"), word))
    }

    /// The index of the first byte at or after `index` that stops a JSON
    /// string scan (see ``firstStringSpecial(in:)``), looking a word at a
    /// time; the last whole word's end (or `index`) when none of the whole
    /// words has one: the caller looks at the shorter tail byte by byte.
    @inline(__always)
    static func skipPlainString(_ bytes: UnsafeRawBufferPointer, from index: Int) -> Int {
        var index = index
        while index + width <= bytes.count {
            if let offset = firstStringSpecial(in: word(bytes, at: index)) { return index + offset }
            index += width
        }
        return index
    }

    @inline(__always)
    private static func offset(_ flags: UInt64) -> Int? {
        let flagged = flags & highBits
        return flagged == 0 ? nil : flagged.trailingZeroBitCount / 8
    }
}
