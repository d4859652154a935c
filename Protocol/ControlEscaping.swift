/// Escapes the characters in text from a peer that would act on whatever
/// shows it: a newline forges a log line or a table row, ESC and the C1
/// controls start terminal sequences (a window title set by OSC, a cleared
/// screen), bidirectional overrides make text read otherwise than it is.
///
/// One pure function, with a notation per destination:
///
/// - ``Notation/swiftLiteral`` (the daemon's logs): `\n`, `\r`, `\t`, `\\`,
///   and `\u{1b}` (lower-case hex, no padding) for every other C0 control,
///   DEL, the C1 controls and U+2028/U+2029. Bidirectional controls pass.
/// - ``Notation/terminal`` (mediatorctl's text for people, as systemctl and
///   journalctl write it): `\n`, `\r`, `\t`, `\\`, `\x1b` for the other C0
///   controls, DEL and C1, and `\u202e` for U+2028/U+2029 and the
///   bidirectional controls.
/// - ``Notation/json`` (JSON text already encoded, shown to people): JSON
///   left the C1 controls, U+2028/U+2029 and the bidirectional controls raw;
///   they become `\u0085` JSON escapes (the same JSON value). The text must
///   not hold C0 controls or backslashes outside JSON escapes, which encoded
///   JSON never does: they pass unchanged.
///
/// Everything else, other non-ASCII text included, passes unchanged.
public enum ControlEscaping {
    /// How an escaped character is written: as a Swift string literal's
    /// `\u{85}`, for a terminal, or as a JSON `\u0085` escape (see above).
    public enum Notation: Sendable {
        /// `swiftLiteral`, `terminal` or `json`, as described on ``ControlEscaping``.
        case swiftLiteral, terminal, json
    }

    /// `text` with every character above escaped; the same string when
    /// there is nothing to escape (the common case costs one scan).
    public static func escaped(_ text: String, _ notation: Notation) -> String {
        guard text.unicodeScalars.contains(where: { needsEscaping($0, notation) }) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard needsEscaping(scalar, notation) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch (scalar, notation) {
            case ("\n", .swiftLiteral), ("\n", .terminal): result += "\\n"
            case ("\r", .swiftLiteral), ("\r", .terminal): result += "\\r"
            case ("\t", .swiftLiteral), ("\t", .terminal): result += "\\t"
            case ("\\", _): result += "\\\\"
            case (_, .swiftLiteral): result += "\\u{" + hex(scalar.value, digits: 1) + "}"
            case (_, .terminal): result += scalar.value <= 0xFF ? "\\x" + hex(scalar.value, digits: 2) : "\\u" + hex(scalar.value, digits: 4)
            case (_, .json): result += "\\u" + hex(scalar.value, digits: 4)
            }
        }
        return result
    }

    /// Whether `scalar` is written other than as itself in `notation`.
    public static func needsEscaping(_ scalar: Unicode.Scalar, _ notation: Notation) -> Bool {
        switch notation {
        case .swiftLiteral: return scalar == "\\" || isControl(scalar)
        case .terminal: return scalar == "\\" || isControl(scalar) || isBidiControl(scalar)
        case .json: return scalar.value > 0x7F && (isControl(scalar) || isBidiControl(scalar))
        }
    }

    /// C0, DEL, C1, and the line and paragraph separators.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029: return true
        default: return false
        }
    }

    /// The bidirectional formatting characters (Unicode's Bidi_Control): the
    /// marks, embeddings, overrides and isolates that reorder what follows.
    public static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// Lower-case hex, padded with zeros to at least `digits`.
    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return text.count >= digits ? text : String(repeating: "0", count: digits - text.count) + text
    }
}
