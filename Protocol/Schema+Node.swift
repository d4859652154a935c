// A schema's keywords as read once, at `register`, into a form that is
// quick to check (Schema.swift has the public face and the rules).
extension Schema {
    // MARK: - Storage

    /// A schema's keywords, read; shared by copies of the schema. A `$ref`
    /// holds the index of its definition in the root's ``Scope``, never the
    /// definition itself, so a recursive type is no reference cycle.
    final class Node: Sendable {
        let json: JSONValue
        let typeMask: UInt8
        let typeNames: [String]?
        let properties: [String: Node]
        let required: [String]
        let items: Node?
        /// `enum`, read into a set once so that checking a value costs its size, not the enum's.
        let allowed: AllowedValues?
        /// `minimum` … `maxItems` and `const`; nil when the schema has none of them.
        let bounds: Bounds?
        /// `anyOf` and `oneOf`; nil when the schema has neither.
        let alternatives: Alternatives?
        /// Whether this node or any below it has ``alternatives``: checking
        /// against it then runs on a step budget.
        let containsAlternatives: Bool
        let additional: AdditionalRule
        let description: String?
        let title: String?
        /// `"format": "fd"`: the value is a descriptor, `{"$fd": I}` with I
        /// below the message's `fds` (contract section 8), or null when
        /// `type` allows it.
        let isDescriptor: Bool
        /// This node's `$defs`, sorted by name (for the root, in index order).
        let definitions: [(name: String, node: Node)]
        /// `$ref`: its text, the name, and the name's index in the root's definitions.
        let reference: (text: String, name: String, index: Int)?

        init(
            json: JSONValue, typeMask: UInt8 = 0, typeNames: [String]? = nil, properties: [String: Node] = [:],
            required: [String] = [], items: Node? = nil, allowed: AllowedValues? = nil, bounds: Bounds? = nil,
            alternatives: Alternatives? = nil, additional: AdditionalRule = .allowed, description: String?, title: String? = nil,
            isDescriptor: Bool = false, definitions: [(name: String, node: Node)] = [],
            reference: (text: String, name: String, index: Int)? = nil
        ) {
            self.json = json
            self.typeMask = typeMask
            self.typeNames = typeNames
            self.properties = properties
            self.required = required
            self.items = items
            self.allowed = allowed
            self.bounds = bounds
            self.alternatives = alternatives
            var below = properties.values.contains { $0.containsAlternatives } || items?.containsAlternatives == true
                || definitions.contains { $0.node.containsAlternatives }
            if case .schema(let extra) = additional, extra.containsAlternatives { below = true }
            self.containsAlternatives = alternatives != nil || below
            self.additional = additional
            self.description = description
            self.title = title
            self.isDescriptor = isDescriptor
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

            var allowed: AllowedValues?
            if let values = members["enum"] {
                guard let list = values.arrayValue else { throw malformed(path + ".enum", "must be an array") }
                guard !list.isEmpty else { throw malformed(path + ".enum", "must not be empty") }
                allowed = AllowedValues(list)
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

            let isDescriptor = try readDescriptorFormat(members, typeMask: typeMask, path: path)

            return Node(
                json: json, typeMask: typeMask, typeNames: typeNames, properties: properties, required: required,
                items: items, allowed: allowed, bounds: try Bounds.read(members, path: path),
                alternatives: try Alternatives.read(
                    members, path: path, depth: depth, definitionIndex: definitionIndex),
                additional: additional, description: description,
                title: try readString(members, "title", path: path), isDescriptor: isDescriptor,
                definitions: definitions)
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

        /// Whether `format` is `"fd"`. Other formats stay annotations, as in
        /// JSON Schema; a descriptor's `type`, when given, must allow the
        /// object `{"$fd": I}` (null besides is an absent descriptor).
        private static func readDescriptorFormat(_ members: [String: JSONValue], typeMask: UInt8, path: String)
            throws(MediatorError) -> Bool
        {
            guard members["format"] == .string(descriptorFormat) else { return false }
            if typeMask != 0 && typeMask & ~(Kind.object.bit | Kind.null.bit) != 0 || typeMask == Kind.null.bit {
                throw malformed(
                    path + ".type", "a descriptor (\"format\": \"fd\") is the object {\"$fd\": I}: \"type\" must be \"object\" (or [\"object\", \"null\"])")
            }
            return true
        }

        private static func readString(_ members: [String: JSONValue], _ keyword: String, path: String)
            throws(MediatorError) -> String?
        {
            guard let value = members[keyword] else { return nil }
            guard let string = value.stringValue else { throw malformed(path + "." + keyword, "must be a string") }
            return string
        }
    }
}
