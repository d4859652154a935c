import MediatorProtocol

/// A JSON Schema in a compact notation for people, as `mediatorctl
/// describe` shows params and results:
///
///     {city: string, days?: integer 1…14 = 7, tags?: [string] ≤5 items}
///     "plain" | "todo"          string | null          Note ($ref to $defs)
///
/// Object members are `name: T`, `name?: T` when not required; required
/// ones first in the order of `required`, then the others by name (a
/// schema's members have no order of their own once parsed). Bounds follow
/// the type: `1…14`, `≥1`, `>0`, `≤14`, `<100`, with `chars` for a string's
/// length and `items` for an array's; `= V` is the default, `*: T` the
/// schema of members not listed (`additionalProperties`). `anyOf` reads
/// `A | B`, `oneOf` `oneOf(A, B)`; an empty schema `any`. Keywords it does
/// not know are left out: `--json` shows the schema itself.
///
/// Pure, and escaping what it shows of the schema (names, literals), so
/// that the pieces can be measured as printed.
public enum SchemaNotation {
    public typealias Piece = TextLayout.Piece

    /// The schema on one line.
    public static func text(_ schema: JSONValue) -> String { TextLayout.inline(piece(schema)) }

    /// The schema as a piece that may be broken over lines.
    public static func piece(_ schema: JSONValue) -> Piece {
        guard case .object(let members) = schema else {
            // `true` accepts anything, `false` nothing.
            return .text(schema == .bool(false) ? "never" : "any")
        }
        var piece = core(members)
        if let value = members["default"] { piece = .sequence([piece, .text(" = " + literal(value))]) }
        return piece
    }

    /// The members of an object schema as items: for `{…}` and for an action's `(…)`.
    public static func memberItems(_ members: [String: JSONValue]) -> [Piece] {
        let properties = members["properties"]?.objectValue ?? [:]
        let required = (members["required"]?.arrayValue ?? []).compactMap(\.stringValue).filter { properties[$0] != nil }
        var seen = Set<String>()
        let requiredOnes = required.filter { seen.insert($0).inserted }
        let optional = properties.keys.filter { !seen.contains($0) }.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        var items: [Piece] = requiredOnes.map { member($0, properties[$0] ?? .object([:]), optional: false) }
        items += optional.map { member($0, properties[$0] ?? .object([:]), optional: true) }
        if let extra = members["additionalProperties"], case .object = extra {
            items.append(.sequence([.text("*: "), piece(extra)]))
        }
        return items
    }

    /// Whether the schema is of objects only: `type` "object", or no
    /// `type` and object keywords, and nothing that makes it another
    /// notation (`$ref`, `enum`, `const`, `anyOf`, `oneOf`).
    public static func isObject(_ members: [String: JSONValue]) -> Bool {
        for keyword in ["$ref", "enum", "const", "anyOf", "oneOf", "default"] where members[keyword] != nil { return false }
        switch members["type"] {
        case .string("object")?: return true
        case nil: return inferredKinds(members) == ["object"]
        default: return false
        }
    }

    /// Whether the schema accepts no member beyond those it names.
    public static func isClosed(_ members: [String: JSONValue]) -> Bool {
        members["additionalProperties"] == .bool(false)
    }

    // MARK: - Parts

    private static func core(_ members: [String: JSONValue]) -> Piece {
        if let reference = members["$ref"]?.stringValue {
            let prefix = "#/$defs/"
            return .text(name(reference.hasPrefix(prefix) ? String(reference.dropFirst(prefix.count)) : reference))
        }
        if let value = members["const"] { return .text(literal(value)) }
        if let values = members["enum"]?.arrayValue, !values.isEmpty {
            return .text(values.map(literal).joined(separator: " | "))
        }
        if let alternatives = members["anyOf"]?.arrayValue, !alternatives.isEmpty {
            return union(alternatives.map(piece))
        }
        if let alternatives = members["oneOf"]?.arrayValue, !alternatives.isEmpty {
            return .group(open: "oneOf(", items: alternatives.map(piece), close: ")")
        }
        let kinds: [String]
        switch members["type"] {
        case .string(let kind)?: kinds = [kind]
        case .array(let names)?: kinds = names.compactMap(\.stringValue)
        default: kinds = inferredKinds(members)
        }
        guard !kinds.isEmpty else { return withBounds(.text("any"), members, kind: nil) }
        return union(kinds.map { kind($0, members) })
    }

    /// `A | B`, a sequence so that an object among them can still break.
    private static func union(_ pieces: [Piece]) -> Piece {
        guard pieces.count > 1 else { return pieces.first ?? .text("any") }
        var parts: [Piece] = []
        for (index, piece) in pieces.enumerated() {
            if index > 0 { parts.append(.text(" | ")) }
            parts.append(piece)
        }
        return .sequence(parts)
    }

    /// A schema without `type`: what its keywords imply.
    private static func inferredKinds(_ members: [String: JSONValue]) -> [String] {
        if members["properties"] != nil || members["additionalProperties"] != nil { return ["object"] }
        if members["items"] != nil { return ["array"] }
        return []
    }

    private static func kind(_ kind: String, _ members: [String: JSONValue]) -> Piece {
        switch kind {
        case "object":
            let items = memberItems(members)
            if items.isEmpty { return .text(isClosed(members) ? "{}" : "object") }
            return .group(open: "{", items: items, close: "}")
        case "array":
            guard let items = members["items"] else { return withBounds(.text("array"), members, kind: kind) }
            return withBounds(.sequence([.text("["), piece(items), .text("]")]), members, kind: kind)
        default:
            return withBounds(.text(name(kind)), members, kind: kind)
        }
    }

    /// `piece` and the bounds that apply to `kind` (all of them when the
    /// kind is unknown).
    private static func withBounds(_ piece: Piece, _ members: [String: JSONValue], kind: String?) -> Piece {
        var bounds: [String] = []
        if kind == nil || kind == "integer" || kind == "number" {
            bounds += range(members, min: "minimum", max: "maximum", unit: nil)
            if let value = members["exclusiveMinimum"], value.doubleValue != nil { bounds.append(">" + literal(value)) }
            if let value = members["exclusiveMaximum"], value.doubleValue != nil { bounds.append("<" + literal(value)) }
        }
        if kind == nil || kind == "string" { bounds += range(members, min: "minLength", max: "maxLength", unit: "chars") }
        if kind == nil || kind == "array" { bounds += range(members, min: "minItems", max: "maxItems", unit: "items") }
        guard !bounds.isEmpty else { return piece }
        return .sequence([piece, .text(" " + bounds.joined(separator: " "))])
    }

    /// `1…14`, `≥1`, `≤14`, with the unit after.
    private static func range(_ members: [String: JSONValue], min: String, max: String, unit: String?) -> [String] {
        let low = members[min].flatMap { $0.doubleValue != nil ? literal($0) : nil }
        let high = members[max].flatMap { $0.doubleValue != nil ? literal($0) : nil }
        let text: String
        switch (low, high) {
        case let (low?, high?): text = low == high ? low : "\(low)…\(high)"
        case let (low?, nil): text = "≥" + low
        case let (nil, high?): text = "≤" + high
        case (nil, nil): return []
        }
        return [unit.map { "\(text) \($0)" } ?? text]
    }

    private static func member(_ name: String, _ schema: JSONValue, optional: Bool) -> Piece {
        .sequence([.text(Self.name(name) + (optional ? "?: " : ": ")), piece(schema)])
    }

    // MARK: - Words

    /// A member or definition name: bare when it reads as one, else as a
    /// JSON string; escaped either way.
    static func name(_ text: String) -> String {
        let bytes = Array(text.utf8)
        let plain = !bytes.isEmpty && !(bytes[0] >= UInt8(ascii: "0") && bytes[0] <= UInt8(ascii: "9"))
            && bytes.allSatisfy { byte in
                let lower = byte | 0x20
                return (lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            }
        return plain ? text : literal(.string(text))
    }

    /// A value as JSON (`"todo"`, `7`, `2.5`), escaped; a whole double without `.0`.
    static func literal(_ value: JSONValue) -> String {
        if case .double(let number) = value, number.rounded() == number, abs(number) < 1e15 { return String(Int64(number)) }
        return Output.escaped(value.jsonText)
    }
}
