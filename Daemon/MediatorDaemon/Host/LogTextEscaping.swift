import Logging
import MediatorProtocol

/// Escapes the characters that let text reaching a log forge or hide log
/// lines: a peer's `hello` name or executable path with a newline in it would
/// otherwise start a line of its own ("… critical mediatord : uid=0 …").
///
/// The notation is that of a Swift string literal, so an escaped line reads
/// back unambiguously:
///
/// - `\n`, `\r`, `\t` for LF, CR and TAB;
/// - `\\` for a backslash (so a peer's literal `\n` stays distinct from an
///   escaped newline);
/// - `\u{XX}` (lower-case hex, no padding) for every other C0 control
///   (U+0000–U+001F, ESC is `\u{1b}`), DEL (U+007F), the C1 controls
///   (U+0080–U+009F, NEL included) and the Unicode line and paragraph
///   separators U+2028 and U+2029.
///
/// Everything else, other non-ASCII text included, passes unchanged.
package enum LogTextEscaping {
    /// `text` with every character above escaped (``ControlEscaping``, the
    /// notation of a Swift string literal).
    package static func escaped(_ text: String) -> String {
        ControlEscaping.escaped(text, .swiftLiteral)
    }

    /// A metadata value with every string in it escaped, however deeply it is
    /// nested; a `stringConvertible` becomes the escaped string of its
    /// description (that is what a handler would print).
    package static func escaped(_ value: Logger.MetadataValue) -> Logger.MetadataValue {
        switch value {
        case .string(let text): return .string(escaped(text))
        case .stringConvertible(let convertible): return .string(escaped(convertible.description))
        case .dictionary(let dictionary): return .dictionary(escaped(dictionary))
        case .array(let values): return .array(values.map(escaped))
        }
    }

    /// Metadata with every key and value escaped.
    package static func escaped(_ metadata: Logger.Metadata) -> Logger.Metadata {
        var result: Logger.Metadata = [:]
        result.reserveCapacity(metadata.count)
        for (key, value) in metadata { result[escaped(key)] = escaped(value) }
        return result
    }
}
