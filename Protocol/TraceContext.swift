/// The W3C Trace Context members a request may carry (`traceparent`,
/// `tracestate`; a documented extension, docs/protocol.md).
///
/// The daemon never decodes them: it checks their bytes as they arrived and
/// forwards them unchanged. A `traceparent` that is not well formed is
/// dropped, and its `tracestate` with it, as W3C Trace Context says a
/// receiver does with one it cannot parse.
public enum TraceContext {
    /// A version-00 `traceparent`: `00-<32 hex>-<16 hex>-<2 hex>`.
    public static let maxTraceparentBytes = 55
    /// W3C: a platform should propagate at least 512 bytes of `tracestate`;
    /// this is also the most the daemon passes on.
    public static let maxTracestateBytes = 512

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
    /// escapes included) is a `tracestate` the daemon forwards: at most
    /// ``maxTracestateBytes`` bytes, printable ASCII. Its list structure is
    /// the tracing system's business and not checked.
    public static func isValidTracestate(_ text: UnsafeRawBufferPointer) -> Bool {
        text.count <= maxTracestateBytes && text.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    public static func isValidTraceparent(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { isValidTraceparent(UnsafeRawBufferPointer($0)) }
    }

    /// For a decoded string: also without `"` or `\`, so that its JSON form
    /// (what the daemon checks) is the same bytes and within the limit.
    public static func isValidTracestate(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            isValidTracestate(UnsafeRawBufferPointer(bytes))
                && !bytes.contains(UInt8(ascii: "\"")) && !bytes.contains(UInt8(ascii: "\\"))
        }
    }
}
