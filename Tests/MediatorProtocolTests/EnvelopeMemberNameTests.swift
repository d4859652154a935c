import Testing

@testable import MediatorProtocol

/// `EnvelopeParser.memberName` reads short plain names on a fast path (as
/// two words, when 16 bytes of the frame follow the quote) and everything
/// else through the string parser: both must give the same member, leave
/// the parser after the closing quote, and refuse the same.
@Suite struct EnvelopeMemberNameTests {
    /// The member a name's JSON text (quotes included) stands for, and where
    /// the parser stopped: the same with a short frame after the name (the
    /// general path) and with 16 more bytes (the fast one), or nil for both.
    private static func read(_ text: String) -> (member: EnvelopeParser.Member?, position: Int)? {
        let short = read(text, padding: 0)
        let padded = read(text, padding: 16)
        #expect(short?.member == padded?.member && short?.position == padded?.position, "\(text)")
        return padded
    }

    private static func read(_ text: String, padding: Int) -> (member: EnvelopeParser.Member?, position: Int)? {
        let bytes = Array(text.utf8) + Array(#":1}"#.utf8) + Array(repeating: UInt8(ascii: " "), count: padding)
        return bytes.withUnsafeBytes { raw in
            var parser = JSONParser(raw)
            do {
                let member = try EnvelopeParser.memberName(&parser)
                return (member, parser.position)
            } catch {
                return nil
            }
        }
    }

    @Test(arguments: EnvelopeParser.Member.allCases)
    func knownNamesPlainAndEscaped(_ member: EnvelopeParser.Member) throws {
        let plain = "\"\(member.name)\""
        let read = try #require(Self.read(plain))
        #expect(read.member == member)
        #expect(read.position == plain.utf8.count)
        // The first letter written as a \u escape: the general path, the same member.
        let first = member.name.unicodeScalars.first.map { String($0.value, radix: 16) } ?? ""
        let escaped = "\"\\u00\(first)\(member.name.dropFirst())\""
        let viaEscape = try #require(Self.read(escaped))
        #expect(viaEscape.member == member)
        #expect(viaEscape.position == escaped.utf8.count)
    }

    @Test(arguments: [
        "idx", "Id", "fd", "fdss", "Fds", "target_", "timeout", "remote_callers", "a b", "", "x",
        String(repeating: "a", count: 16), String(repeating: "a", count: 17), String(repeating: "b", count: 300),
        "tärget", "id\u{7F}",
    ])
    func otherNamesAreUnknown(_ name: String) throws {
        let text = "\"\(name)\""
        let read = try #require(Self.read(text))
        #expect(read.member == nil)
        #expect(read.position == text.utf8.count)
    }

    @Test(arguments: [
        "\"a\u{1F}\"", "\"\(String(repeating: "a", count: 16))\u{01}\"", "\"\\q\"", "\"abc", "\"\(String(repeating: "a", count: 20))",
    ])
    func malformedNamesAreRefused(_ text: String) {
        #expect(Self.read(text) == nil)
    }
}
