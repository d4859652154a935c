/// A JSON Schema of the subset the contract allows in an ActionSpec (section 6):
/// `type`, `properties`, `required`, `items`, `enum`, `additionalProperties`
/// and `description`, with JSON Schema's meaning.
///
/// The daemon checks every call to an action that declares `params` before
/// forwarding it, so the schema is read once, at `register`, into a form
/// that is quick to check; a malformed schema is refused there rather than
/// failing later on each call. The original JSON is kept for `describe` and
/// for comparing the specs of a pool, and equality is that of the JSON.
///
/// Unknown keywords are ignored (and kept in ``json``). As in JSON Schema, a
/// number with an integral value (`1.0`) is an `integer`, `number` accepts
/// integers, and `properties`/`items` only apply to objects/arrays.
public struct Schema: Sendable, Hashable {
    /// The schema exactly as it was given.
    public let json: JSONValue
    private let rules: Rules

    /// Reads a schema; throws `bad_request` naming the faulty keyword by path
    /// (for example `schema.properties.title.type: unknown type name "strin"`).
    public init(json: JSONValue) throws(MediatorError) {
        try self.init(json: json, path: "schema")
    }

    /// Reads a schema whose errors name it `path` (ActionSpec says `params`, `result`).
    init(json: JSONValue, path: String) throws(MediatorError) {
        try self.init(json: json, path: path, depth: 0)
    }

    public static func == (lhs: Schema, rhs: Schema) -> Bool { lhs.json == rhs.json }
    public func hash(into hasher: inout Hasher) { hasher.combine(json) }

    /// The `description` keyword.
    public var description: String? { rules.description }
    /// The allowed type names, in the order given; nil when `type` is absent.
    public var types: [String]? { rules.typeNames }
    /// The `properties` keyword; empty when absent.
    public var properties: [String: Schema] { rules.propertyMap }
    /// The `required` keyword; empty when absent.
    public var required: [String] { rules.required }
    /// The `items` keyword.
    public var items: Schema? { rules.items }
    /// The `enum` keyword.
    public var enumValues: [JSONValue]? { rules.enumValues }

    /// Checks `value`; nil when it matches, else an `invalid_params` error
    /// whose message names the first offending member by path, starting at
    /// `path` (`params.tags[2]: expected one of ["a","b"]`).
    public func validate(_ value: JSONValue, path: String = "params") -> MediatorError? {
        guard let problem = check(value, path: path) else { return nil }
        return MediatorError(.invalidParams, problem)
    }

    // MARK: - Reading

    /// Deeper schemas are refused so that checking cannot exhaust the stack.
    private static let maxDepth = 64

    private init(json: JSONValue, path: String, depth: Int) throws(MediatorError) {
        guard depth <= Self.maxDepth else { throw Self.malformed(path, "schema is nested too deeply") }
        guard let members = json.objectValue else {
            throw Self.malformed(path, "a schema must be an object, got \(json.typeName)")
        }

        var typeMask: UInt8 = 0
        var typeNames: [String]?
        if let type = members["type"] {
            let names: [String]
            switch type {
            case .string(let name):
                names = [name]
            case .array(let items):
                var collected: [String] = []
                for item in items {
                    guard let name = item.stringValue else {
                        throw Self.malformed(path + ".type", "must be a type name or an array of type names")
                    }
                    collected.append(name)
                }
                guard !collected.isEmpty else { throw Self.malformed(path + ".type", "must not be an empty array") }
                names = collected
            default:
                throw Self.malformed(path + ".type", "must be a type name or an array of type names")
            }
            for name in names {
                guard let bit = Kind(name: name)?.bit else {
                    throw Self.malformed(
                        path + ".type",
                        "unknown type name \(Self.quoted(name)); expected one of null, boolean, integer, number, string, array, object"
                    )
                }
                typeMask |= bit
            }
            typeNames = names
        }

        var propertyMap: [String: Schema] = [:]
        if let properties = members["properties"] {
            guard let declared = properties.objectValue else {
                throw Self.malformed(path + ".properties", "must be an object of schemas")
            }
            for (name, schema) in declared {
                propertyMap[name] = try Schema(
                    json: schema, path: path + ".properties" + Self.memberPath(name), depth: depth + 1)
            }
        }

        var required: [String] = []
        if let list = members["required"] {
            guard let items = list.arrayValue else {
                throw Self.malformed(path + ".required", "must be an array of strings")
            }
            for item in items {
                guard let name = item.stringValue else {
                    throw Self.malformed(path + ".required", "must be an array of strings")
                }
                if !required.contains(name) { required.append(name) }
            }
        }

        var items: Schema?
        if let itemSchema = members["items"] {
            guard itemSchema.objectValue != nil else {
                throw Self.malformed(path + ".items", "must be a schema object")
            }
            items = try Schema(json: itemSchema, path: path + ".items", depth: depth + 1)
        }

        var enumValues: [JSONValue]?
        if let values = members["enum"] {
            guard let list = values.arrayValue else { throw Self.malformed(path + ".enum", "must be an array") }
            guard !list.isEmpty else { throw Self.malformed(path + ".enum", "must not be empty") }
            enumValues = list
        }

        var additional = Additional.allowed
        if let extra = members["additionalProperties"] {
            switch extra {
            case .bool(true):
                break
            case .bool(false):
                additional = .forbidden
            case .object:
                additional = .schema(try Schema(json: extra, path: path + ".additionalProperties", depth: depth + 1))
            default:
                throw Self.malformed(path + ".additionalProperties", "must be a boolean or a schema object")
            }
        }

        var description: String?
        if let text = members["description"] {
            guard let string = text.stringValue else {
                throw Self.malformed(path + ".description", "must be a string")
            }
            description = string
        }

        self.json = json
        self.rules = Rules(
            typeMask: typeMask,
            typeNames: typeNames,
            propertyMap: propertyMap,
            sortedProperties: propertyMap.sorted { $0.key < $1.key },
            required: required,
            items: items,
            enumValues: enumValues,
            additional: additional,
            description: description
        )
    }

    private static func malformed(_ path: String, _ problem: String) -> MediatorError {
        MediatorError(.badRequest, "\(path): \(problem)")
    }

    // MARK: - Checking

    private func check(_ value: JSONValue, path: String) -> String? {
        let kind = Kind(of: value)
        if rules.typeMask != 0 && !kind.isAccepted(by: rules.typeMask) {
            let expected = (rules.typeNames ?? []).joined(separator: " or ")
            return "\(path): expected \(expected), got \(kind.name)"
        }

        if let enumValues = rules.enumValues, !enumValues.contains(where: { Self.sameValue($0, value) }) {
            let listed = enumValues.map(Self.render).joined(separator: ",")
            return "\(path): expected one of [\(listed)]"
        }

        switch value {
        case .object(let members):
            for name in rules.required where members[name] == nil {
                return "\(path): missing required member \(Self.quoted(name))"
            }
            for (name, schema) in rules.sortedProperties {
                guard let member = members[name] else { continue }
                if let problem = schema.check(member, path: path + Self.memberPath(name)) { return problem }
            }
            if case .allowed = rules.additional { return nil }
            let extras = members.keys.filter { rules.propertyMap[$0] == nil }
            guard !extras.isEmpty else { return nil }
            for name in extras.sorted() {
                let memberPath = path + Self.memberPath(name)
                switch rules.additional {
                case .allowed:
                    return nil
                case .forbidden:
                    return "\(memberPath): member not allowed"
                case .schema(let schema):
                    if let member = members[name], let problem = schema.check(member, path: memberPath) {
                        return problem
                    }
                }
            }
        case .array(let elements):
            guard let items = rules.items else { return nil }
            for (index, element) in elements.enumerated() {
                if let problem = items.check(element, path: "\(path)[\(index)]") { return problem }
            }
        default:
            break
        }
        return nil
    }

    /// JSON equality where numbers compare by value, so that `1` matches `1.0`.
    private static func sameValue(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)):
            // Compare exactly: converting a large Int64 to Double could round.
            guard b.isFinite, b.rounded(.towardZero) == b, b >= -9.223372036854775808e18, b < 9.223372036854775808e18
            else { return false }
            return Int64(b) == a
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { sameValue($0, $1) }
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for (key, value) in a {
                guard let other = b[key], sameValue(value, other) else { return false }
            }
            return true
        default:
            return lhs == rhs
        }
    }

    // MARK: - Paths and rendering

    /// `.name` for names that read well after a dot, else `["…"]`.
    private static func memberPath(_ name: String) -> String {
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
    private static func quoted(_ text: String) -> String {
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
    private static func render(_ value: JSONValue) -> String {
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

    // MARK: - Storage

    /// The checked keywords, shared by copies of the schema.
    private final class Rules: Sendable {
        let typeMask: UInt8
        let typeNames: [String]?
        let propertyMap: [String: Schema]
        let sortedProperties: [(key: String, value: Schema)]
        let required: [String]
        let items: Schema?
        let enumValues: [JSONValue]?
        let additional: Additional
        let description: String?

        init(
            typeMask: UInt8, typeNames: [String]?, propertyMap: [String: Schema],
            sortedProperties: [(key: String, value: Schema)], required: [String], items: Schema?,
            enumValues: [JSONValue]?, additional: Additional, description: String?
        ) {
            self.typeMask = typeMask
            self.typeNames = typeNames
            self.propertyMap = propertyMap
            self.sortedProperties = sortedProperties
            self.required = required
            self.items = items
            self.enumValues = enumValues
            self.additional = additional
            self.description = description
        }
    }

    /// What `additionalProperties` allows for members not in `properties`.
    private enum Additional: Sendable {
        case allowed
        case forbidden
        case schema(Schema)
    }

    /// The JSON Schema type of a value, as a bit for the `type` mask.
    private enum Kind: UInt8 {
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
