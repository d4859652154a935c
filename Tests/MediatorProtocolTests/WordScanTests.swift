import Testing

@testable import MediatorProtocol

/// The word-at-a-time tests must say exactly what a byte-by-byte look says,
/// the first matching byte included, whatever the neighbouring bytes (a
/// borrow between bytes must not move it).
@Suite struct WordScanTests {
    static func isStringSpecial(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    static func word(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { WordScan.word($0, at: 0) }
    }

    @Test func everyByteValueAtEveryPosition() {
        for fill in [UInt8(ascii: "a"), 0x00, 0x0A, 0x21, 0x7F, 0xFF] {
            for value in UInt8.min...UInt8.max {
                for position in 0..<8 {
                    var bytes = [UInt8](repeating: fill, count: 8)
                    bytes[position] = value
                    let word = Self.word(bytes)
                    #expect(WordScan.first(0x0A, in: word) == bytes.firstIndex(of: 0x0A), "\(bytes)")
                    #expect(WordScan.firstStringSpecial(in: word) == bytes.firstIndex(where: Self.isStringSpecial), "\(bytes)")
                }
            }
        }
    }

    @Test func randomWordsAgreeWithBytes() {
        var generator = SystemRandomNumberGenerator()
        // Bytes near the boundaries, where a borrow could spill into the next byte.
        let interesting: [UInt8] = [0x00, 0x01, 0x09, 0x0A, 0x0B, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0x81, 0xFF]
        for _ in 0..<20_000 {
            let bytes = (0..<8).map { _ in
                Bool.random(using: &generator) ? interesting.randomElement(using: &generator) ?? 0 : UInt8.random(in: 0x20...0x7E, using: &generator)
            }
            let word = Self.word(bytes)
            #expect(WordScan.first(0x0A, in: word) == bytes.firstIndex(of: 0x0A), "\(bytes)")
            #expect(WordScan.firstStringSpecial(in: word) == bytes.firstIndex(where: Self.isStringSpecial), "\(bytes)")
        }
    }
}
