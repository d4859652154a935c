extension JSONValue {
    /// Compact JSON (no raw newline can appear), object members sorted by
    /// name so that output is stable.
    public func encode(into output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let flag): output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .int(let number): output.append(contentsOf: String(number).utf8)
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
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                JSONValue.encodeString(key, into: &output)
                output.append(UInt8(ascii: ":"))
                members[key, default: .null].encode(into: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    public static func encodeString(_ text: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): output.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: output.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x00..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                output.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }

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
