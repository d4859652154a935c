/// How a schema names the members it checks and the values it expects, in
/// its error messages (`params.tags[2]: expected one of ["a","b"]`), and the
/// JSON type kinds it checks against.
extension Schema {
    /// One step down into a value: a member of an object, an item of an array.
    enum PathStep: Sendable {
        case member(String)
        case index(Int)
    }

    /// `params.tags[2]`: where a value sits below `root`, from steps
    /// collected on the way back up (the innermost first).
    static func path(_ root: String, _ reversedSteps: [PathStep]) -> String {
        var text = root
        for step in reversedSteps.reversed() {
            switch step {
            case .member(let name): text += memberPath(name)
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }

    /// `.name` for names that read well after a dot, else `["…"]`.
    static func memberPath(_ name: String) -> String {
        let bytes = name.utf8
        guard let first = bytes.first, !(first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")),
            bytes.allSatisfy({ byte in
                let lower = byte | 0x20
                return (lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            })
        else { return "[\(quoted(name))]" }
        return "." + name
    }

    /// A JSON string literal for `text`.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// Compact JSON for a value in a message (object members sorted).
    static func render(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .int(let number): return String(number)
        case .double(let number): return String(describing: number)
        case .string(let text): return quoted(text)
        case .array(let items): return "[" + items.map(render).joined(separator: ",") + "]"
        case .object(let members):
            let rendered = members.sorted { $0.key < $1.key }.map { quoted($0.key) + ":" + render($0.value) }
            return "{" + rendered.joined(separator: ",") + "}"
        }
    }

    /// The JSON Schema type of a value, as a bit for the `type` mask.
    enum Kind: UInt8 {
        case null = 1
        case boolean = 2
        case integer = 4
        case number = 8
        case string = 16
        case array = 32
        case object = 64

        init?(name: String) {
            switch name {
            case "null": self = .null
            case "boolean": self = .boolean
            case "integer": self = .integer
            case "number": self = .number
            case "string": self = .string
            case "array": self = .array
            case "object": self = .object
            default: return nil
            }
        }

        /// The narrowest kind of `value`; any finite integral number is an integer.
        init(of value: JSONValue) {
            switch value {
            case .null: self = .null
            case .bool: self = .boolean
            case .int: self = .integer
            case .double(let number): self = number.isFinite && number.rounded(.towardZero) == number ? .integer : .number
            case .string: self = .string
            case .array: self = .array
            case .object: self = .object
            }
        }

        var bit: UInt8 { rawValue }

        var name: String {
            switch self {
            case .null: "null"
            case .boolean: "boolean"
            case .integer: "integer"
            case .number: "number"
            case .string: "string"
            case .array: "array"
            case .object: "object"
            }
        }

        /// `number` accepts integers too.
        func isAccepted(by mask: UInt8) -> Bool {
            if mask & rawValue != 0 { return true }
            return self == .integer && mask & Kind.number.rawValue != 0
        }
    }
}
