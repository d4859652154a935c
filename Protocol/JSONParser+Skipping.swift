// Validation without building values: what the broker does with the
// params and results it only forwards (JSONParser.swift has the reader).
extension JSONParser {
    /// Checks one value and moves past it, building nothing.
    mutating func skipValue(depth: Int) throws(JSONParseError) {
        guard !atEnd else { throw error("unexpected end of input") }
        switch current {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            try skipContainer(depth: depth + 1)
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        default: _ = try scanNumber()
        }
    }

    /// Moves into the object or array at the current byte, at `depth`:
    /// whether it is an object and the byte that closes it, or nil for an
    /// empty one, already moved past.
    @inline(__always)
    mutating func enterContainer(depth: Int) throws(JSONParseError) -> (isObject: Bool, close: UInt8)? {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth)") }
        let isObject = current == UInt8(ascii: "{")
        let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        position += 1
        skipWhitespace()
        if !atEnd, current == close { position += 1; return nil }
        return (isObject, close)
    }

    mutating func skipContainer(depth: Int) throws(JSONParseError) {
        guard let (isObject, close) = try enterContainer(depth: depth) else { return }
        while true {
            skipWhitespace()
            if isObject {
                guard !atEnd, current == UInt8(ascii: "\"") else { throw error("expected a member name") }
                try skipString()
                skipWhitespace()
                try expect(UInt8(ascii: ":"), "':'")
                skipWhitespace()
            }
            try skipValue(depth: depth)
            skipWhitespace()
            guard !atEnd else { throw error("unexpected end of input") }
            if current == UInt8(ascii: ",") { position += 1; continue }
            if current == close { position += 1; return }
            throw error(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
        }
    }

    /// Checks a string as ``parseString()`` does (escapes, surrogate pairs,
    /// UTF-8) without building it.
    mutating func skipString() throws(JSONParseError) {
        position += 1
        let start = position
        var isASCII = true
        let end = bytes.count
        while position < end {
            // Plain bytes a word at a time; the byte that stops it is looked at below.
            position = WordScan.skipPlainString(bytes, from: position)
            guard position < end else { break }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                guard isASCII || isValidUTF8(start..<position) else {
                    throw JSONParseError(offset: start, reason: "string is not valid UTF-8")
                }
                position += 1
                return
            }
            if byte < 0x20 { throw error("control character in a string") }
            if byte >= 0x80 { isASCII = false }
            if byte == UInt8(ascii: "\\") {
                position += 1
                guard !atEnd else { break }
                if current == UInt8(ascii: "u") {
                    position += 1
                    if !allowsLoneSurrogates {
                        _ = try parseUnicodeEscape()  // rejects lone surrogates, as parseString does
                    } else if try unicodeEscape() == nil, loneSurrogate == nil {
                        loneSurrogate = position - 6
                    }
                    continue
                }
                switch current {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                    UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                default: throw error("invalid escape")
                }
            }
            position += 1
        }
        throw error("unterminated string")
    }

    /// Whether `range` holds well-formed UTF-8, without allocating.
    func isValidUTF8(_ range: Range<Int>) -> Bool {
        var iterator = UnsafeRawBufferPointer(rebasing: bytes[range]).makeIterator()
        var decoder = Unicode.UTF8.ForwardParser()
        while true {
            switch decoder.parseScalar(from: &iterator) {
            case .valid: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
