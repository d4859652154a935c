import Testing

@testable import MediatorProtocol

/// The escaping shared by the daemon's logs and mediatorctl's text for
/// people (issue 23, point 8: a component's error code with ESC, OSC and a
/// newline reached the terminal raw).
@Suite("Control escaping: peers' text cannot drive a terminal or forge a line")
struct ControlEscapingTests {
    @Test(
        "Terminal notation: C0, DEL, C1, separators and bidirectional controls as systemctl shows them",
        arguments: [
            ("plain code", "plain code"),
            ("", ""),
            ("\u{1b}]0;pwned\u{7}\u{1b}[2J\nx  forged row", "\\x1b]0;pwned\\x07\\x1b[2J\\nx  forged row"),
            ("a\r\nb\tc", "a\\r\\nb\\tc"),
            ("nul\u{0}del\u{7f}", "nul\\x00del\\x7f"),
            ("c1\u{80}nel\u{85}csi\u{9b}end\u{9f}", "c1\\x80nel\\x85csi\\x9bend\\x9f"),
            ("ls\u{2028}ps\u{2029}", "ls\\u2028ps\\u2029"),
            ("rlo\u{202e}lri\u{2066}pdi\u{2069}lrm\u{200e}alm\u{61c}", "rlo\\u202elri\\u2066pdi\\u2069lrm\\u200ealm\\u061c"),
            ("literal \\x1b stays distinct", "literal \\\\x1b stays distinct"),
            ("caf\u{e9} \u{a0} 日本 🙂 ²", "caf\u{e9} \u{a0} 日本 🙂 ²"),
        ])
    func terminal(input: String, expected: String) {
        let escaped = ControlEscaping.escaped(input, .terminal)
        #expect(escaped == expected)
        #expect(!escaped.unicodeScalars.contains { ControlEscaping.isControl($0) || ControlEscaping.isBidiControl($0) })
    }

    @Test("JSON notation: what JSON leaves raw becomes a JSON escape, and the text still parses to the same value")
    func json() throws {
        let value: JSONValue = ["code": "c1\u{9b}31m\u{202e}", "message": "tab\t\u{1b}]0;t\u{7}", "plain": "caf\u{e9} \\"]
        let escaped = ControlEscaping.escaped(value.jsonText, .json)
        #expect(escaped.contains("c1\\u009b31m\\u202e"))
        #expect(!escaped.unicodeScalars.contains { ControlEscaping.isControl($0) || ControlEscaping.isBidiControl($0) })
        #expect(try JSONParser.parse(escaped) == value)
        let plain: JSONValue = ["a": "caf\u{e9} \\n"]
        #expect(ControlEscaping.escaped(plain.jsonText, .json) == plain.jsonText)
    }

    @Test("Swift-literal notation (the daemon's logs) leaves bidirectional controls alone")
    func swiftLiteral() {
        #expect(ControlEscaping.escaped("\u{1b}\u{85}\u{202e}\\", .swiftLiteral) == "\\u{1b}\\u{85}\u{202e}\\\\")
    }
}
