/// A JSON Schema of the subset the contract allows in an ActionSpec (section 6):
/// `type`, `properties`, `required`, `items`, `enum`, `additionalProperties`
/// and `description`, with JSON Schema's meaning; and our extensions (issue
/// 11): `title`, `$defs` (named schemas) and `$ref` (only `#/$defs/NAME`,
/// resolved against the `$defs` of the root schema).
///
/// The daemon checks every call to an action that declares `params` (and
/// every result of one that declares `result`), so the schema is read once,
/// at `register`, into a form that is quick to check; a malformed schema is
/// refused there rather than failing later on each call. The original JSON is
/// kept for `describe` and for comparing the specs of a pool, and equality is
/// that of the JSON.
///
/// Unknown keywords are ignored (and kept in ``json``), except beside `$ref`,
/// which allows only `description`. As in JSON Schema, a number with an
/// integral value (`1.0`) is an `integer`, `number` accepts integers, and
/// `properties`/`items` only apply to objects/arrays.
///
/// A recursive type through an object or array (`Node.children: [Node]`) is
/// allowed: checking follows the value, which is finite. A cycle of `$ref`s
/// with nothing in between (`A` is `$ref B`, `B` is `$ref A`) would check
/// nothing and is refused.
public struct Schema: Sendable, Hashable {
    /// This schema's keywords, read.
    private let node: Node
    /// The root's `$defs`, against which every `$ref` in the tree resolves;
    /// nil when the root has none (and so the tree has no `$ref`). Nodes
    /// never point back at it, so recursive types make no reference cycle.
    private let scope: Scope?

    /// Reads a schema; throws `bad_request` naming the faulty keyword by path
    /// (for example `schema.properties.title.type: unknown type name "strin"`).
    public init(json: JSONValue) throws(MediatorError) {
        try self.init(json: json, path: "schema")
    }

    /// Reads a schema whose errors name it `path` (ActionSpec says `params`, `result`).
    init(json: JSONValue, path: String) throws(MediatorError) {
        var definitionIndex: [String: Int] = [:]
        if let definitions = json.objectValue?["$defs"]?.objectValue {
            for (index, name) in definitions.keys.sorted().enumerated() { definitionIndex[name] = index }
        }
        let root = try Node.read(json, path: path, depth: 0, definitionIndex: definitionIndex)
        self.node = root
        self.scope = definitionIndex.isEmpty ? nil : try Scope(root: root, path: path)
    }

    private init(node: Node, scope: Scope?) {
        self.node = node
        self.scope = scope
    }

    public static func == (lhs: Schema, rhs: Schema) -> Bool { lhs.json == rhs.json }
    public func hash(into hasher: inout Hasher) { hasher.combine(json) }

    /// The schema exactly as it was given.
    public var json: JSONValue { node.json }
    /// The `description` keyword.
    public var description: String? { node.description }
    /// The `title` keyword (it names the generated type of an object schema).
    public var title: String? { node.title }
    /// The allowed type names, in the order given; nil when `type` is absent.
    public var types: [String]? { node.typeNames }
    /// The `properties` keyword; empty when absent.
    public var properties: [String: Schema] { node.properties.mapValues { Schema(node: $0, scope: scope) } }
    /// The `required` keyword, without repeats; empty when absent.
    public var required: [String] { node.required }
    /// The `items` keyword.
    public var items: Schema? { node.items.map { Schema(node: $0, scope: scope) } }
    /// The `enum` keyword.
    public var enumValues: [JSONValue]? { node.enumValues }
    /// The `additionalProperties` keyword; ``AdditionalProperties/allowed`` when absent.
    public var additionalProperties: AdditionalProperties {
        switch node.additional {
        case .allowed: .allowed
        case .forbidden: .forbidden
        case .schema(let extra): .schema(Schema(node: extra, scope: scope))
        }
    }
    /// The `$defs` keyword of this schema, as given, keyed by name; empty when
    /// absent. Only the root's definitions can be the target of a `$ref`.
    public var definitions: [String: Schema] {
        var byName: [String: Schema] = [:]
        for (name, definition) in node.definitions { byName[name] = Schema(node: definition, scope: scope) }
        return byName
    }
    /// The `$ref` keyword as written (`#/$defs/Note`); nil when absent.
    public var reference: String? { node.reference?.text }
    /// The name a `$ref` points at (`Note` for `#/$defs/Note`); nil without `$ref`.
    public var referenceName: String? { node.reference?.name }
    /// The root definition a `$ref` names (itself possibly a `$ref`); nil without `$ref`.
    public var referenced: Schema? {
        guard let reference = node.reference, let scope else { return nil }
        return Schema(node: scope.definitions[reference.index], scope: scope)
    }

    /// What `additionalProperties` allows for members not in `properties`.
    public enum AdditionalProperties: Sendable, Hashable {
        /// Absent or `true`.
        case allowed
        /// `false`.
        case forbidden
        /// A schema each extra member must match.
        case schema(Schema)
    }

    /// Checks `value`; nil when it matches, else an `invalid_params` error
    /// whose message names the first offending member by path, starting at
    /// `path` (`params.tags[2]: expected one of ["a","b"]`).
    public func validate(_ value: JSONValue, path: String = "params") -> MediatorError? {
        guard let problem = node.check(value, path: path, scope: scope, depth: 0) else { return nil }
        return MediatorError(.invalidParams, problem)
    }

    // MARK: - Reading

    /// Deeper schemas are refused so that reading and checking cannot exhaust the stack.
    fileprivate static let maxDepth = 64
    /// How deep checking follows a value through a recursive type: more than
    /// any value the JSON parser gives (128), so only a value built in code
    /// can reach it, and it then fails instead of exhausting the stack.
    fileprivate static let maxValueDepth = 256
    /// The only form of `$ref`: a name in the root's `$defs`.
    fileprivate static let referencePrefix = "#/$defs/"

    fileprivate static func malformed(_ path: String, _ problem: String) -> MediatorError {
        MediatorError(.badRequest, "\(path): \(problem)")
    }

    // MARK: - Storage

    /// A schema's keywords, read; shared by copies of the schema. A `$ref`
    /// holds the index of its definition in the root's ``Scope``, never the
    /// definition itself, so a recursive type is no reference cycle.
    fileprivate final class Node: Sendable {
        let json: JSONValue
        let typeMask: UInt8
        let typeNames: [String]?
        let properties: [String: Node]
        let sortedProperties: [(key: String, value: Node)]
        let required: [String]
        let items: Node?
        let enumValues: [JSONValue]?
        let additional: AdditionalRule
        let description: String?
        let title: String?
        /// This node's `$defs`, sorted by name (for the root, in index order).
        let definitions: [(name: String, node: Node)]
        /// `$ref`: its text, the name, and the name's index in the root's definitions.
        let reference: (text: String, name: String, index: Int)?

        init(
            json: JSONValue, typeMask: UInt8 = 0, typeNames: [String]? = nil, properties: [String: Node] = [:],
            required: [String] = [], items: Node? = nil, enumValues: [JSONValue]? = nil,
            additional: AdditionalRule = .allowed, description: String?, title: String? = nil,
            definitions: [(name: String, node: Node)] = [], reference: (text: String, name: String, index: Int)? = nil
        ) {
            self.json = json
            self.typeMask = typeMask
            self.typeNames = typeNames
            self.properties = properties
            self.sortedProperties = properties.sorted { $0.key < $1.key }
            self.required = required
            self.items = items
            self.enumValues = enumValues
            self.additional = additional
            self.description = description
            self.title = title
            self.definitions = definitions
            self.reference = reference
        }

        /// Reads one schema object and everything below it. `definitionIndex`
        /// maps the root's definition names to their index, for `$ref`.
        static func read(
            _ json: JSONValue, path: String, depth: Int, definitionIndex: [String: Int]
        ) throws(MediatorError) -> Node {
            guard depth <= maxDepth else { throw malformed(path, "schema is nested too deeply") }
            guard let members = json.objectValue else {
                throw malformed(path, "a schema must be an object, got \(json.typeName)")
            }
            let description = try readString(members, "description", path: path)

            // Definitions first: a malformed `$defs` is the error to report,
            // not a `$ref` to a name it would have held.
            var definitions: [(name: String, node: Node)] = []
            if let declared = members["$defs"] {
                guard let byName = declared.objectValue else {
                    throw malformed(path + ".$defs", "must be an object of schemas")
                }
                for name in byName.keys.sorted() {
                    guard let definition = byName[name] else { continue }
                    let node = try read(
                        definition, path: path + ".$defs" + memberPath(name), depth: depth + 1,
                        definitionIndex: definitionIndex)
                    definitions.append((name, node))
                }
            }

            // A root that is only a reference to one of its own definitions
            // (`{"$ref": "#/$defs/Note", "$defs": {...}}`) is the usual shape
            // of a named type, so `$defs` may stand beside `$ref`.
            if let referenceValue = members["$ref"] {
                return try readReference(
                    referenceValue, members, json: json, description: description, definitions: definitions,
                    path: path, definitionIndex: definitionIndex)
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
                            throw malformed(path + ".type", "must be a type name or an array of type names")
                        }
                        collected.append(name)
                    }
                    guard !collected.isEmpty else { throw malformed(path + ".type", "must not be an empty array") }
                    names = collected
                default:
                    throw malformed(path + ".type", "must be a type name or an array of type names")
                }
                for name in names {
                    guard let bit = Kind(name: name)?.bit else {
                        throw malformed(
                            path + ".type",
                            "unknown type name \(quoted(name)); expected one of null, boolean, integer, number, string, array, object"
                        )
                    }
                    typeMask |= bit
                }
                typeNames = names
            }

            var properties: [String: Node] = [:]
            if let declared = members["properties"] {
                guard let byName = declared.objectValue else {
                    throw malformed(path + ".properties", "must be an object of schemas")
                }
                for (name, schema) in byName {
                    properties[name] = try read(
                        schema, path: path + ".properties" + memberPath(name), depth: depth + 1,
                        definitionIndex: definitionIndex)
                }
            }

            var required: [String] = []
            if let list = members["required"] {
                guard let items = list.arrayValue else {
                    throw malformed(path + ".required", "must be an array of strings")
                }
                for item in items {
                    guard let name = item.stringValue else {
                        throw malformed(path + ".required", "must be an array of strings")
                    }
                    if !required.contains(name) { required.append(name) }
                }
            }

            var items: Node?
            if let itemSchema = members["items"] {
                guard itemSchema.objectValue != nil else {
                    throw malformed(path + ".items", "must be a schema object")
                }
                items = try read(itemSchema, path: path + ".items", depth: depth + 1, definitionIndex: definitionIndex)
            }

            var enumValues: [JSONValue]?
            if let values = members["enum"] {
                guard let list = values.arrayValue else { throw malformed(path + ".enum", "must be an array") }
                guard !list.isEmpty else { throw malformed(path + ".enum", "must not be empty") }
                enumValues = list
            }

            var additional = AdditionalRule.allowed
            if let extra = members["additionalProperties"] {
                switch extra {
                case .bool(true):
                    break
                case .bool(false):
                    additional = .forbidden
                case .object:
                    additional = .schema(
                        try read(
                            extra, path: path + ".additionalProperties", depth: depth + 1,
                            definitionIndex: definitionIndex))
                default:
                    throw malformed(path + ".additionalProperties", "must be a boolean or a schema object")
                }
            }

            return Node(
                json: json, typeMask: typeMask, typeNames: typeNames, properties: properties, required: required,
                items: items, enumValues: enumValues, additional: additional, description: description,
                title: try readString(members, "title", path: path), definitions: definitions)
        }

        /// A `{"$ref": "#/$defs/NAME", "description"?, "$defs"?}` schema.
        private static func readReference(
            _ value: JSONValue, _ members: [String: JSONValue], json: JSONValue, description: String?,
            definitions: [(name: String, node: Node)], path: String, definitionIndex: [String: Int]
        ) throws(MediatorError) -> Node {
            // Other siblings of `$ref` would be silently ignored (or, in JSON
            // Schema 2020-12, apply too): refused rather than misread.
            if let sibling = members.keys.filter({ $0 != "$ref" && $0 != "description" && $0 != "$defs" }).min() {
                throw malformed(path, "\"$ref\" allows no other keyword but \"description\" and \"$defs\", found \(quoted(sibling))")
            }
            guard let text = value.stringValue else {
                throw malformed(path + ".$ref", "must be a string, got \(value.typeName)")
            }
            let name = text.hasPrefix(referencePrefix) ? String(text.dropFirst(referencePrefix.count)) : ""
            // No JSON Pointer escapes: a name is the `$defs` key as written.
            guard !name.isEmpty, !name.contains("/"), !name.contains("~") else {
                throw malformed(path + ".$ref", "must be \"#/$defs/NAME\" (a definition of the root schema), got \(quoted(text))")
            }
            guard let index = definitionIndex[name] else {
                throw malformed(path + ".$ref", "no definition \(quoted(name)) in the root schema's \"$defs\"")
            }
            return Node(json: json, description: description, definitions: definitions, reference: (text, name, index))
        }

        private static func readString(_ members: [String: JSONValue], _ keyword: String, path: String)
            throws(MediatorError) -> String?
        {
            guard let value = members[keyword] else { return nil }
            guard let string = value.stringValue else { throw malformed(path + "." + keyword, "must be a string") }
            return string
        }

        // MARK: Checking

        func check(_ value: JSONValue, path: String, scope: Scope?, depth: Int) -> String? {
            if let reference {
                // Scope.resolved skips chains of `$ref`s: one hop, whatever their length.
                guard let scope else { return nil }
                return scope.resolved[reference.index].check(value, path: path, scope: scope, depth: depth)
            }
            let kind = Kind(of: value)
            if typeMask != 0 && !kind.isAccepted(by: typeMask) {
                let expected = (typeNames ?? []).joined(separator: " or ")
                return "\(path): expected \(expected), got \(kind.name)"
            }

            if let enumValues, !enumValues.contains(where: { sameValue($0, value) }) {
                let listed = enumValues.map(render).joined(separator: ",")
                return "\(path): expected one of [\(listed)]"
            }

            switch value {
            case .object(let members):
                for name in required where members[name] == nil {
                    return "\(path): missing required member \(quoted(name))"
                }
                if depth >= maxValueDepth, !members.isEmpty { return "\(path): nested too deeply to check" }
                for (name, schema) in sortedProperties {
                    guard let member = members[name] else { continue }
                    if let problem = schema.check(member, path: path + memberPath(name), scope: scope, depth: depth + 1) {
                        return problem
                    }
                }
                if case .allowed = additional { return nil }
                let extras = members.keys.filter { properties[$0] == nil }
                guard !extras.isEmpty else { return nil }
                for name in extras.sorted() {
                    let memberPath = path + memberPath(name)
                    switch additional {
                    case .allowed:
                        return nil
                    case .forbidden:
                        return "\(memberPath): member not allowed"
                    case .schema(let schema):
                        if let member = members[name],
                            let problem = schema.check(member, path: memberPath, scope: scope, depth: depth + 1)
                        {
                            return problem
                        }
                    }
                }
            case .array(let elements):
                guard let items else { return nil }
                if depth >= maxValueDepth, !elements.isEmpty { return "\(path): nested too deeply to check" }
                for (index, element) in elements.enumerated() {
                    if let problem = items.check(element, path: "\(path)[\(index)]", scope: scope, depth: depth + 1) {
                        return problem
                    }
                }
            default:
                break
            }
            return nil
        }
    }

    /// The root's definitions, in the order of their sorted names, and what
    /// each one's chain of `$ref`s ends at (a schema that is not a `$ref`).
    fileprivate final class Scope: Sendable {
        let definitions: [Node]
        let resolved: [Node]

        /// Follows each definition's `$ref`s, once each (a long chain costs
        /// its length, not its square), and refuses a cycle.
        init(root: Node, path: String) throws(MediatorError) {
            let names = root.definitions.map(\.name)
            let definitions = root.definitions.map(\.node)
            let unvisited = -1
            let onChain = -2
            var end = [Int](repeating: unvisited, count: definitions.count)
            for start in definitions.indices where end[start] == unvisited {
                var chain: [Int] = []
                var current = start
                var last: Int
                while true {
                    if end[current] >= 0 {
                        last = end[current]
                        break
                    }
                    if end[current] == onChain {
                        let loop = chain.drop(while: { $0 != current }).map { names[$0] } + [names[current]]
                        throw malformed(
                            path + ".$defs" + memberPath(names[current]),
                            "a cycle of \"$ref\" with no object or array in between: " + loop.joined(separator: " -> "))
                    }
                    end[current] = onChain
                    chain.append(current)
                    guard let next = definitions[current].reference?.index else {
                        last = current
                        break
                    }
                    current = next
                }
                for index in chain { end[index] = last }
            }
            self.definitions = definitions
            self.resolved = end.map { definitions[$0] }
        }
    }

    /// What `additionalProperties` allows for members not in `properties`.
    fileprivate enum AdditionalRule: Sendable {
        case allowed
        case forbidden
        case schema(Node)
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
}
