extension JSONValue {
    /// Compact JSON (no raw newline can appear), object members sorted by
    /// name so that output is stable.
    public func encode(into output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let flag): output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .int(let number): JSONValue.encodeInteger(number, into: &output)
        case .double(let number):
            if number.isFinite {
                output.append(contentsOf: String(number).utf8)
            } else {
                output.append(contentsOf: "null".utf8)  // JSON has no NaN or infinity
            }
        case .string(let text): JSONValue.encodeString(text, into: &output)
        case .array(let items):
            output.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                item.encode(into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            if members.count == 1, let (key, value) = members.first {
                // The common small case: no sort, no second lookup.
                JSONValue.encodeString(key, into: &output)
                output.append(UInt8(ascii: ":"))
                value.encode(into: &output)
            } else {
                // Sorted pairs, not sorted keys: each value is not hashed for again.
                for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                    if index > 0 { output.append(UInt8(ascii: ",")) }
                    JSONValue.encodeString(member.key, into: &output)
                    output.append(UInt8(ascii: ":"))
                    member.value.encode(into: &output)
                }
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// Decimal digits written in place (no String in between).
    static func encodeInteger(_ number: Int64, into output: inout [UInt8]) {
        if number < 0 { output.append(UInt8(ascii: "-")) }
        // The magnitude as UInt64: Int64.min has no positive Int64.
        var magnitude = number.magnitude
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // 32 bytes, enough for 20 digits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            output.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[index...]))
        }
    }

    /// Appends `text` as a JSON string, quotes included, escaping what JSON
    /// requires (`"`, `\\`, control characters) and nothing else.
    public static func encodeString(_ text: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var text = text
        // Native strings are contiguous UTF-8; makeContiguousUTF8 only
        // copies a bridged one.
        text.makeContiguousUTF8()
        text.utf8.withContiguousStorageIfAvailable { bytes in
            output.reserveCapacity(output.count + bytes.count + 1)
            // Runs of bytes that need no escape are appended whole; plain
            // ASCII is stepped over a word at a time (WordScan also stops at
            // non-ASCII bytes, which are then passed byte by byte).
            let raw = UnsafeRawBufferPointer(bytes)
            let end = raw.count
            var runStart = 0
            var index = 0
            while index < end {
                index = WordScan.skipPlainString(raw, from: index)
                guard index < end else { break }
                let byte = raw[index]
                if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    if runStart < index { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[runStart..<index])) }
                    appendEscape(byte, into: &output)
                    runStart = index + 1
                }
                index += 1
            }
            if runStart < end { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[runStart...])) }
        }
        output.append(UInt8(ascii: "\""))
    }

    private static func appendEscape(_ byte: UInt8, into output: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): output.append(0x5C); output.append(0x22)
        case UInt8(ascii: "\\"): output.append(0x5C); output.append(0x5C)
        case 0x0A: output.append(0x5C); output.append(UInt8(ascii: "n"))
        case 0x0D: output.append(0x5C); output.append(UInt8(ascii: "r"))
        case 0x09: output.append(0x5C); output.append(UInt8(ascii: "t"))
        default:
            let hex: StaticString = "0123456789abcdef"
            hex.withUTF8Buffer { digits in
                output.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
            }
        }
    }

    /// The value as compact JSON text (no LF), as ``encode(into:)`` writes it.
    public var encoded: [UInt8] {
        var output: [UInt8] = []
        encode(into: &output)
        return output
    }

    /// Compact JSON text.
    public var jsonText: String { String(decoding: encoded, as: UTF8.self) }

    /// Indented JSON text for people, two spaces, members sorted.
    public func prettyText(indent: Int = 0) -> String {
        let pad = String(repeating: "  ", count: indent + 1)
        let closePad = String(repeating: "  ", count: indent)
        switch self {
        case .array(let items) where !items.isEmpty:
            let lines = items.map { pad + $0.prettyText(indent: indent + 1) }
            return "[\n" + lines.joined(separator: ",\n") + "\n" + closePad + "]"
        case .object(let members) where !members.isEmpty:
            let lines = members.keys.sorted().map { key in
                pad + JSONValue.string(key).jsonText + ": " + members[key, default: .null].prettyText(indent: indent + 1)
            }
            return "{\n" + lines.joined(separator: ",\n") + "\n" + closePad + "}"
        default:
            return jsonText
        }
    }
}

extension JSONValue: CustomStringConvertible {
    public var description: String { jsonText }
}
