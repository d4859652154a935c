/// The W3C Trace Context members a request may carry (`traceparent`,
/// `tracestate`; a documented extension, docs/protocol.md).
///
/// The daemon forwards them unchanged. A `traceparent` is checked on its
/// bytes as they arrived; one that is not well formed is dropped, and its
/// `tracestate` with it, as W3C Trace Context says a receiver does with one
/// it cannot parse. A `tracestate` is checked as the component will read
/// it, after unescaping (a `\r\n` written as escapes is still a line break),
/// and dropped alone when it is not well formed.
public enum TraceContext {
    /// A version-00 `traceparent`: `00-<32 hex>-<16 hex>-<2 hex>`.
    public static let maxTraceparentBytes = 55
    /// W3C: a platform should propagate at least 512 characters of
    /// `tracestate`; this is also the most the daemon passes on.
    public static let maxTracestateBytes = 512
    /// W3C: a `tracestate` has at most 32 list-members.
    public static let maxTracestateMembers = 32
    /// The longest JSON form of a `tracestate` within the limit: every
    /// character written as a 6-byte `\uXXXX` escape. Anything longer is
    /// refused without being decoded.
    static let maxEscapedTracestateBytes = 6 * maxTracestateBytes

    /// Whether `text` (the string's contents, without quotes) is a
    /// `traceparent` the daemon forwards: exactly 55 bytes, a version other
    /// than `ff`, lowercase hex fields, and trace and parent ids not all zero.
    /// Written plainly: a JSON escape anywhere makes it malformed.
    public static func isValidTraceparent(_ text: UnsafeRawBufferPointer) -> Bool {
        guard text.count == maxTraceparentBytes else { return false }
        guard text[2] == UInt8(ascii: "-"), text[35] == UInt8(ascii: "-"), text[52] == UInt8(ascii: "-") else {
            return false
        }
        func isHex(_ range: Range<Int>) -> Bool {
            for index in range {
                let byte = text[index]
                guard (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) else { return false }
            }
            return true
        }
        func isAllZero(_ range: Range<Int>) -> Bool { range.allSatisfy { text[$0] == UInt8(ascii: "0") } }
        guard isHex(0..<2), isHex(3..<35), isHex(36..<52), isHex(53..<55) else { return false }
        // Version ff is invalid; all-zero ids are invalid (W3C Trace Context, section 3.2).
        if text[0] == UInt8(ascii: "f"), text[1] == UInt8(ascii: "f") { return false }
        return !isAllZero(3..<35) && !isAllZero(36..<52)
    }

    /// Whether `text` (the string's contents as they are in the frame, JSON
    /// escapes included; already checked as a JSON string) is a
    /// `tracestate` the daemon forwards: ``isValidTracestate(_:)-(String)``
    /// of its unescaped text.
    public static func isValidTracestate(_ text: UnsafeRawBufferPointer) -> Bool {
        guard text.contains(UInt8(ascii: "\\")) else { return isValidTracestateText(text) }
        guard text.count <= maxEscapedTracestateBytes else { return false }
        let quoted = [UInt8(ascii: "\"")] + text + [UInt8(ascii: "\"")]
        guard case .string(let unescaped)? = try? JSONParser.parse(quoted) else { return false }
        return isValidTracestate(unescaped)
    }

    /// ``isValidTraceparent(_:)-(UnsafeRawBufferPointer)`` of a string.
    public static func isValidTraceparent(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { isValidTraceparent(UnsafeRawBufferPointer($0)) }
    }

    /// Whether `text` is a `tracestate` the daemon forwards: at most
    /// ``maxTracestateBytes`` characters of printable ASCII (no control
    /// character, so no line break or terminal escape reaches a component's
    /// logs) in at most ``maxTracestateMembers`` comma-separated members
    /// (empty ones not counted, as W3C says). The members' own syntax is
    /// the tracing system's business and not checked.
    public static func isValidTracestate(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { isValidTracestateText(UnsafeRawBufferPointer($0)) }
    }

    private static func isValidTracestateText(_ text: UnsafeRawBufferPointer) -> Bool {
        guard text.count <= maxTracestateBytes else { return false }
        var members = 0
        var inMember = false
        for byte in text {
            guard byte >= 0x20 && byte < 0x7F else { return false }
            if byte == UInt8(ascii: ",") {
                inMember = false
            } else if byte != UInt8(ascii: " ") && !inMember {
                inMember = true
                members += 1
            }
        }
        return members <= maxTracestateMembers
    }
}
