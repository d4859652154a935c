import MediatorProtocol

/// Builds the member paths that problems and changes name:
/// `actions[2].params.properties.due`, `properties["odd name"]`.
enum MemberPath {
    /// `base.name`, or `base["name"]` when the name would not read well after a dot.
    static func member(_ base: String, _ name: String) -> String {
        guard isPlain(name) else { return base + "[" + quoted(name) + "]" }
        return base.isEmpty ? name : base + "." + name
    }

    static func index(_ base: String, _ index: Int) -> String {
        "\(base)[\(index)]"
    }

    /// A JSON string literal.
    static func quoted(_ text: String) -> String { JSONValue.string(text).jsonText }

    /// A value as JSON text for a reason, cut short when long.
    static func shown(_ value: JSONValue) -> String {
        let text = value.jsonText
        guard text.count > 60 else { return text }
        return String(text.prefix(57)) + "..."
    }

    /// Letters, digits, `_`, `-` and `$` (for `$defs`, `$ref`), not starting with a digit.
    private static func isPlain(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")) else {
            return false
        }
        return name.utf8.allSatisfy { byte in
            let lower = byte | 0x20
            return (lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "$")
        }
    }
}
