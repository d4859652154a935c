/// A strict JSON (RFC 8259) reader over raw bytes.
///
/// It exists, rather than Foundation's `JSONSerialization`, because the broker
/// needs what a generic decoder cannot give: the byte range of each top-level
/// member (so `params` and `result` are forwarded as the bytes that arrived,
/// never decoded and re-encoded), a nesting limit, and validation without
/// building values.
public struct JSONParser {
    /// How deeply arrays and objects may nest unless the caller says
    /// otherwise: deeper input is refused, so that a peer cannot exhaust the stack.
    public static let defaultMaxDepth = 128

    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    var position: Int
    /// When set, ``skipString()`` lets a `\u` escape of a lone UTF-16
    /// surrogate (`\ud800`, which stands for no character) pass and notes
    /// the first in ``loneSurrogate``: a reader can then tell that one
    /// problem apart from a text it cannot read at all.
    var allowsLoneSurrogates = false
    /// Where the first lone surrogate escape ``skipString()`` let pass starts (its backslash).
    var loneSurrogate: Int?

    /// A reader at the start of `bytes`, which must outlive it.
    public init(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = JSONParser.defaultMaxDepth) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.position = 0
    }

    /// Parses one whole document (surrounding whitespace allowed).
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes, maxDepth: maxDepth)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.position == bytes.count else { throw parser.error("unexpected data after the value") }
        return value
    }

    /// Parses one whole document held in any collection of bytes.
    public static func parse(_ bytes: some Collection<UInt8>, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        let array = Array(bytes)
        do {
            return try array.withUnsafeBytes { buffer in try parse(buffer, maxDepth: maxDepth) }
        } catch let error as JSONParseError {
            throw error
        } catch {
            throw JSONParseError(offset: 0, reason: "\(error)")
        }
    }

    /// Parses one whole document from its UTF-8 text.
    public static func parse(_ text: String, maxDepth: Int = defaultMaxDepth) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8), maxDepth: maxDepth)
    }

    /// Parses one whole document that must be an object and hands each
    /// member to `visit` in the order written (a repeated name comes twice;
    /// the last one is what `parse` would keep), without building the
    /// object's dictionary: for small objects read member by member.
    public static func forEachMember(
        _ bytes: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth, _ visit: (String, JSONValue) -> Void
    ) throws(JSONParseError) {
        var parser = JSONParser(bytes, maxDepth: maxDepth)
        parser.skipWhitespace()
        guard !parser.atEnd, parser.current == UInt8(ascii: "{") else { throw parser.error("expected an object") }
        parser.position += 1
        parser.skipWhitespace()
        if !parser.atEnd, parser.current == UInt8(ascii: "}") {
            parser.position += 1
        } else {
            while true {
                parser.skipWhitespace()
                guard !parser.atEnd, parser.current == UInt8(ascii: "\"") else { throw parser.error("expected a member name") }
                let key = try parser.parseString()
                parser.skipWhitespace()
                try parser.expect(UInt8(ascii: ":"), "':'")
                parser.skipWhitespace()
                visit(key, try parser.parseValue(depth: 1))
                parser.skipWhitespace()
                guard !parser.atEnd else { throw parser.error("unexpected end of input in an object") }
                if parser.current == UInt8(ascii: ",") { parser.position += 1; continue }
                if parser.current == UInt8(ascii: "}") { parser.position += 1; break }
                throw parser.error("expected ',' or '}'")
            }
        }
        parser.skipWhitespace()
        guard parser.position == bytes.count else { throw parser.error("unexpected data after the value") }
    }

    // MARK: - Scanning primitives

    func error(_ reason: String) -> JSONParseError {
        JSONParseError(offset: position, reason: reason)
    }

    var atEnd: Bool { position >= bytes.count }

    var current: UInt8 { bytes[position] }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    /// Inlined (every member's `:` passes here, eight times a routed call);
    /// the message is built out of line, only for a failure.
    @inline(__always)
    mutating func expect(_ byte: UInt8, _ what: StaticString) throws(JSONParseError) {
        guard !atEnd, current == byte else { throw expected(what) }
        position += 1
    }

    @inline(never)
    func expected(_ what: StaticString) -> JSONParseError { error("expected \(what)") }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw error("invalid literal") }
        let start = literal.utf8Start
        for offset in 0..<count where bytes[position + offset] != start[offset] {
            throw error("invalid literal")
        }
        position += count
    }

    // MARK: - Values

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard !atEnd else { throw error("unexpected end of input") }
        switch current {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        default: return try parseNumber()
        }
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth)") }
        position += 1
        skipWhitespace()
        if !atEnd, current == UInt8(ascii: "}") {
            position += 1
            return .object([:])
        }
        // The dictionary is made with its first member (a literal of one:
        // storage of the right size, the key hashed once). Grown from empty,
        // the first insert hashes its key twice, before and after the
        // storage is made; `init(minimumCapacity:)` is not specialized.
        var members: [String: JSONValue]?
        while true {
            skipWhitespace()
            guard !atEnd, current == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let key = try parseString()
            skipWhitespace()
            try expect(UInt8(ascii: ":"), "':'")
            skipWhitespace()
            let value = try parseValue(depth: depth)
            if members == nil {
                members = [key: value]
            } else {
                members?[key] = value
            }
            skipWhitespace()
            guard !atEnd else { throw error("unexpected end of input in an object") }
            if current == UInt8(ascii: ",") { position += 1; continue }
            if current == UInt8(ascii: "}") { position += 1; return .object(members ?? [:]) }
            throw error("expected ',' or '}'")
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth)") }
        position += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if !atEnd, current == UInt8(ascii: "]") {
            position += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue(depth: depth))
            skipWhitespace()
            guard !atEnd else { throw error("unexpected end of input in an array") }
            if current == UInt8(ascii: ",") { position += 1; continue }
            if current == UInt8(ascii: "]") { position += 1; return .array(items) }
            throw error("expected ',' or ']'")
        }
    }

    mutating func parseString() throws(JSONParseError) -> String {
        position += 1  // opening quote
        let start = position
        // Fast path: no escapes. Plain ASCII a word at a time; the byte
        // that stops the word scan is looked at below.
        var ascii = true
        let end = bytes.count
        while position < end {
            position = WordScan.skipPlainString(bytes, from: position)
            guard position < end else { break }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
                position += 1
                if ascii {
                    // ASCII is valid UTF-8: no validation pass, which
                    // String(validating:) does generically (slowly).
                    return slice.withMemoryRebound(to: UInt8.self) { String(decoding: $0, as: UTF8.self) }
                }
                guard let text = String(validating: slice, as: UTF8.self) else {
                    throw JSONParseError(offset: start, reason: "string is not valid UTF-8")
                }
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in a string") }
            if byte >= 0x80 { ascii = false }
            position += 1
        }
        var utf8 = Array(bytes[start..<position])
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                guard let text = String(validating: utf8, as: UTF8.self) else {
                    throw JSONParseError(offset: start, reason: "string is not valid UTF-8")
                }
                return text
            case UInt8(ascii: "\\"):
                position += 1
                guard !atEnd else { throw error("unterminated escape") }
                let escaped = current
                position += 1
                switch escaped {
                case UInt8(ascii: "\""): utf8.append(0x22)
                case UInt8(ascii: "\\"): utf8.append(0x5C)
                case UInt8(ascii: "/"): utf8.append(0x2F)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try parseUnicodeEscape()
                    utf8.append(contentsOf: String(Character(scalar)).utf8)
                // At the escaped byte, as skipString reports it.
                default: throw JSONParseError(offset: position - 1, reason: "invalid escape")
                }
            default:
                if byte < 0x20 { throw error("control character in a string") }
                utf8.append(byte)
                position += 1
            }
        }
        throw error("unterminated string")
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    /// A `\u` escape, read from just after the `u`, and the low half that
    /// follows a high surrogate.
    mutating func parseUnicodeEscape() throws(JSONParseError) -> Unicode.Scalar {
        let start = position - 2
        guard let scalar = try unicodeEscape() else { throw loneSurrogateError(at: start) }
        return scalar
    }

    /// The error for the lone surrogate escape whose backslash is at `start`.
    func loneSurrogateError(at start: Int) -> JSONParseError {
        let escape = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<(start + 6)]), as: UTF8.self)
        return JSONParseError(offset: start, reason: "lone surrogate escape \(escape) (half of a UTF-16 pair: no character)")
    }

    /// ``parseUnicodeEscape()`` that answers nil for a lone surrogate,
    /// leaving the position just after it (an escape that follows is read
    /// on its own).
    mutating func unicodeEscape() throws(JSONParseError) -> Unicode.Scalar? {
        let high = try parseHex4()
        guard (0xD800...0xDBFF).contains(high) else { return Unicode.Scalar(high) }
        let afterHigh = position
        if position + 6 <= bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") {
            position += 2
            let low = try parseHex4()
            if (0xDC00...0xDFFF).contains(low), let scalar = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)) {
                return scalar
            }
        }
        position = afterHigh
        return nil
    }

    /// Scans a number's bytes; returns whether it had a fraction or exponent.
    mutating func scanNumber() throws(JSONParseError) -> Bool {
        var isInteger = true
        if !atEnd, current == UInt8(ascii: "-") { position += 1 }
        guard !atEnd, isDigit(current) else { throw error("invalid value") }
        if current == UInt8(ascii: "0") {
            position += 1
        } else {
            while !atEnd, isDigit(current) { position += 1 }
        }
        if !atEnd, current == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard !atEnd, isDigit(current) else { throw error("digit expected after '.'") }
            while !atEnd, isDigit(current) { position += 1 }
        }
        if !atEnd, current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if !atEnd, current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            guard !atEnd, isDigit(current) else { throw error("digit expected in exponent") }
            while !atEnd, isDigit(current) { position += 1 }
        }
        return isInteger
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = position
        let isInteger = try scanNumber()
        if isInteger {
            // Up to 18 digits cannot overflow Int64: summed in place, no String.
            let negative = bytes[start] == UInt8(ascii: "-")
            let digits = (negative ? start + 1 : start)..<position
            if digits.count <= 18 {
                var magnitude: Int64 = 0
                for index in digits { magnitude = magnitude * 10 + Int64(bytes[index] &- UInt8(ascii: "0")) }
                return .int(negative ? -magnitude : magnitude)
            }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        if isInteger, let number = Int64(text) { return .int(number) }
        guard let number = Double(text) else { throw JSONParseError(offset: start, reason: "invalid number") }
        return .double(number)
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
