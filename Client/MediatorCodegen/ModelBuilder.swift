import MediatorInterface
import MediatorProtocol

/// Reads an interface file's JSON into an ``InterfaceModel``: checks what
/// generation relies on, names every type (contract section 2) and resolves
/// `$ref`s. Deterministic: dictionaries are walked in sorted key order.
struct ModelBuilder {
    /// The members `describe` adds to an interface; not embedded in the output.
    static let describeMembers: Set<String> = ["mode", "state", "calls_served", "instances", "activation", "uptime_s"]

    private var typeNames = NameAllocator()
    private var declarations: [Declaration] = []

    /// `$defs` entries of every params/result root, by key: one shared type per key.
    private struct Definition {
        var json: JSONValue
        var place: String
        var typeName: String
        /// The keys of the `$defs` beside it: what its own `$ref`s may name.
        var rootKeys: Set<String>
    }
    private var definitions: [String: Definition] = [:]

    static func build(_ interface: JSONValue) throws(CodegenError) -> InterfaceModel {
        var builder = ModelBuilder()
        return try builder.run(interface)
    }

    private mutating func run(_ interface: JSONValue) throws(CodegenError) -> InterfaceModel {
        guard let members = interface.objectValue else {
            throw CodegenError(path: "", reason: "an interface must be a JSON object, got \(interface.typeName)")
        }
        guard let targetValue = members["target"] else {
            throw CodegenError(path: "target", reason: "missing; an interface names its target")
        }
        guard let target = targetValue.stringValue, NameRules.isValidTarget(target) else {
            throw CodegenError(path: "target", reason: "expected a target name ([A-Za-z][A-Za-z0-9_.-]*), got \(targetValue.jsonText)")
        }
        var description: String?
        if let value = members["description"], !value.isNull {
            guard let text = value.stringValue else {
                throw CodegenError(path: "description", reason: "expected a string, got \(value.typeName)")
            }
            description = text
        }
        guard let actionsValue = members["actions"] else {
            throw CodegenError(path: "actions", reason: "missing; an interface lists its actions")
        }
        guard let actionList = actionsValue.arrayValue else {
            throw CodegenError(path: "actions", reason: "expected an array of action specs, got \(actionsValue.typeName)")
        }

        let stem = Naming.upperCamel(target)
        let names = InterfaceModel.TypeNames(
            client: stem + "Client", service: stem + "Service", interface: stem + "Interface")
        typeNames = NameAllocator(reserved: Self.reservedTypeNames.union([
            names.client, names.service, names.interface,
        ]))

        // Pass 1: the actions' own members, and every root `$defs` entry.
        var specs: [(spec: [String: JSONValue], name: String, path: String)] = []
        var seenActions: Set<String> = []
        var embeddedActions: [JSONValue] = []
        for (index, value) in actionList.enumerated() {
            let spec: [String: JSONValue]
            switch value {
            case .string: spec = ["name": value]
            case .object(let object): spec = object
            default:
                throw CodegenError(path: "actions[\(index)]", reason: "expected an action name or an object, got \(value.typeName)")
            }
            guard let nameValue = spec["name"] else {
                throw CodegenError(path: "actions[\(index)]", reason: "missing member \"name\"")
            }
            guard let name = nameValue.stringValue, NameRules.isValidAction(name) else {
                throw CodegenError(
                    path: "actions[\(index)].name",
                    reason: "expected an action name ([A-Za-z_][A-Za-z0-9_.-]*), got \(nameValue.jsonText)")
            }
            let path = "actions[\(index)] (\(name))"
            guard seenActions.insert(name).inserted else {
                throw CodegenError(path: path, reason: "the action \"\(name)\" is declared twice")
            }
            for flag in ["more", "oneway"] {
                if let value = spec[flag], !value.isNull, value.boolValue == nil {
                    throw CodegenError(path: "\(path).\(flag)", reason: "expected a boolean, got \(value.typeName)")
                }
            }
            if spec["more"]?.boolValue == true && spec["oneway"]?.boolValue == true {
                throw CodegenError(path: path, reason: "\"more\" and \"oneway\" cannot both be true")
            }
            for member in ["params", "result"] {
                guard let schema = spec[member], !schema.isNull else { continue }
                try collectDefinitions(of: schema, place: "\(path).\(member)")
            }
            specs.append((spec, name, path))
            embeddedActions.append(.object(spec))
        }

        // Names: `$defs` keys first (they are chosen names), then each
        // action's params and result, then nested objects as they are met.
        for key in definitionOrder {
            definitions[key]?.typeName = typeNames.unique(Naming.upperCamel(key))
        }
        var rootNames: [(params: String, result: String)] = []
        for entry in specs {
            let stem = Naming.upperCamel(entry.name)
            rootNames.append((typeNames.unique(stem + "Params"), typeNames.unique(stem + "Result")))
        }
        for key in definitionOrder {
            try buildDefinition(key)
        }

        var methodNames = NameAllocator(reserved: ["client", "target", "init", "interface"])
        var pythonMethodNames = NameAllocator(reserved: ["_client", "target", "self"])
        var actions: [ActionModel] = []
        for (entry, roots) in zip(specs, rootNames) {
            let spec = entry.spec
            var paramsFreeForm = true
            for (member, typeName) in [("params", roots.params), ("result", roots.result)] {
                let schema = spec[member].flatMap { $0.isNull ? nil : $0 }
                let freeForm = try buildRoot(schema, typeName: typeName, path: "\(entry.path).\(member)",
                                             rootSchema: schema)
                if member == "params" { paramsFreeForm = freeForm }
            }
            actions.append(ActionModel(
                name: entry.name,
                description: spec["description"]?.stringValue,
                swiftName: methodNames.unique(Naming.lowerCamel(entry.name)),
                pythonName: pythonMethodNames.unique(Naming.pythonEscaped(Naming.snake(entry.name))),
                paramsType: roots.params, resultType: roots.result,
                paramsFreeForm: paramsFreeForm,
                more: spec["more"]?.boolValue == true,
                oneway: spec["oneway"]?.boolValue == true))
        }

        var embedded: [String: JSONValue] = ["target": .string(target), "actions": .array(embeddedActions)]
        if let description { embedded["description"] = .string(description) }
        let model = InterfaceModel(
            target: target, description: description, embedded: .object(embedded), actions: actions,
            declarations: AliasCycles.broken(declarations), typeNames: names)
        try UnionNesting.check(model)
        return model
    }

    /// Names no generated type may take: Swift's and the library's types the
    /// output uses, and Python's module-level names.
    static let reservedTypeNames: Set<String> = [
        "Any", "Self", "Type", "Protocol", "String", "Int", "Int64", "Double", "Bool", "Array", "Dictionary",
        "Optional", "Never", "Void", "Error", "Codable", "Decodable", "Encodable", "Sendable", "Equatable",
        "Decoder", "Encoder", "CodingKey", "CodingKeys", "Duration", "JSONValue", "JSONParser", "MediatorClient",
        "MediatorError", "MediatorProtocol", "Component", "ActionSpec", "CallContext", "Foundation",
        "AsyncThrowingStream", "MediatorStream", "Task", "INTERFACE", "None", "True", "False", "Indirect",
    ]

    // MARK: - $defs

    private var definitionOrder: [String] = []

    private mutating func collectDefinitions(of root: JSONValue, place: String) throws(CodegenError) {
        guard let object = root.objectValue, let defs = object["$defs"] else { return }
        guard let entries = defs.objectValue else {
            throw CodegenError(path: "\(place).$defs", reason: "expected an object of named schemas, got \(defs.typeName)")
        }
        for key in entries.keys.sorted() {
            let json = entries[key] ?? .null
            let entryPlace = "\(place).$defs.\(key)"
            if let known = definitions[key] {
                guard known.json == json else {
                    throw CodegenError(
                        path: entryPlace,
                        reason: "conflicts with the definition of \"\(key)\" at \(known.place); a shared $defs name must mean the same schema everywhere")
                }
                continue
            }
            definitions[key] = Definition(json: json, place: entryPlace, typeName: "", rootKeys: Set(entries.keys))
            definitionOrder.append(key)
        }
    }

    private mutating func buildDefinition(_ key: String) throws(CodegenError) {
        guard let definition = definitions[key] else { return }
        // A definition's own `$ref`s resolve against the `$defs` beside it.
        currentRootKeys = definition.rootKeys
        try declare(definition.json, as: definition.typeName, path: definition.place, refChain: [key])
    }

    // MARK: - Roots

    /// Declares `typeName` for a params/result schema: a struct, an enum, or an
    /// alias. Returns whether it is free-form (absent, or not an object with
    /// properties: the params argument then defaults to `{}`).
    private mutating func buildRoot(_ schema: JSONValue?, typeName: String, path: String, rootSchema: JSONValue?)
        throws(CodegenError) -> Bool
    {
        guard let schema else {
            append(.alias(AliasDecl(name: typeName, description: nil, target: TypeRef(.any))))
            return true
        }
        currentRootKeys = Set(rootSchema?["$defs"]?.objectValue.map { Array($0.keys) } ?? [])
        try declare(schema, as: typeName, path: path, refChain: [])
        if case .alias(let alias)? = declarations.last, alias.name == typeName, alias.target.shape == .any,
            !alias.target.nullable
        {
            return true
        }
        return false
    }

    /// The `$defs` keys of the params/result schema being read.
    private var currentRootKeys: Set<String> = []

    /// Declares `name` for `schema`: an object with properties becomes a
    /// struct, a string enum an enum, anything else an alias.
    private mutating func declare(_ schema: JSONValue, as name: String, path: String, refChain: [String])
        throws(CodegenError)
    {
        let members = try Self.schemaObject(schema, path: path)
        let description = members["description"]?.stringValue
        if members["$ref"] != nil {
            let target = try reference(members, path: path, refChain: refChain)
            append(.alias(AliasDecl(name: name, description: description, target: target)))
            return
        }
        let (shape, nullable) = try classify(members, path: path)
        switch shape {
        case .object:
            // Reserve the slot first so a nested `$ref` back to a definition
            // in progress finds the name, and nested types come after it.
            let slot = append(.structure(StructDecl(name: name, description: description, fields: [])))
            let fields = try buildFields(members, owner: name, path: path)
            declarations[slot] = .structure(StructDecl(name: name, description: description, fields: fields))
            if nullable {
                // A nullable object at a root: the struct, and null allowed.
                replaceWithNullableAlias(slot: slot, name: name, description: description)
            }
        case .enumeration(let values):
            let slot = append(.enumeration(Self.enumDecl(name: name, description: description, values: values)))
            if nullable { replaceWithNullableAlias(slot: slot, name: name, description: description) }
        case .plain:
            // Arrays need their items read: the same path as a member's type.
            let target = try typeOf(schema, suggestedName: name, path: path)
            append(.alias(AliasDecl(name: name, description: description, target: target)))
        case .union(let rule, let list):
            try declareUnion(name, description: description, rule: rule, list: list, path: path)
        }
    }

    /// Declares the union `name`; its alternatives' own types (an object, an
    /// enum) are named after it: `ValueOption2`, unless titled.
    private mutating func declareUnion(
        _ name: String, description: String?, rule: UnionDecl.Rule, list: [JSONValue], path: String
    ) throws(CodegenError) {
        let slot = append(.union(UnionDecl(name: name, description: description, rule: rule, alternatives: [])))
        var caseNames = NameAllocator(reserved: ["init", "jsonValue", "validate"])
        var alternatives: [UnionDecl.Alternative] = []
        for (index, schema) in list.enumerated() {
            let place = "\(path).\(rule.rawValue)[\(index)]"
            let type: TypeRef?
            if Self.allowsOnlyNull(schema) {
                type = nil
            } else {
                type = try typeOf(schema, suggestedName: name + "Option\(index + 1)", path: place)
            }
            alternatives.append(UnionDecl.Alternative(swiftName: caseNames.unique(Self.caseStem(type)), type: type))
        }
        declarations[slot] = .union(UnionDecl(name: name, description: description, rule: rule, alternatives: alternatives))
    }

    private static func allowsOnlyNull(_ schema: JSONValue) -> Bool {
        schema["type"] == .string("null") || schema["type"] == .array([.string("null")])
    }

    /// A case's name, from its type: `string`, `point` (struct `Point`), `null`.
    private static func caseStem(_ type: TypeRef?) -> String {
        guard let type else { return "null" }
        switch type.shape {
        case .string: return "string"
        case .integer: return "integer"
        case .number: return "number"
        case .boolean: return "boolean"
        case .any: return "value"
        case .descriptor: return "descriptor"
        case .array: return "array"
        case .named(let name): return Naming.lowerCamel(name)
        }
    }

    /// A nullable root object or enum keeps its declaration under `NameBody`
    /// and `name` becomes an alias of it that allows null.
    private mutating func replaceWithNullableAlias(slot: Int, name: String, description: String?) {
        let bodyName = typeNames.unique(name + "Body")
        switch declarations[slot] {
        case .structure(var decl): decl.name = bodyName; declarations[slot] = .structure(decl)
        case .enumeration(var decl): decl.name = bodyName; declarations[slot] = .enumeration(decl)
        case .alias, .union: return
        }
        append(.alias(AliasDecl(name: name, description: description, target: TypeRef(.named(bodyName), nullable: true))))
    }

    @discardableResult
    private mutating func append(_ declaration: Declaration) -> Int {
        declarations.append(declaration)
        return declarations.count - 1
    }

    // MARK: - Members

    private enum Classified {
        case object
        case enumeration([String])
        case plain(TypeRef.Shape)
        /// `anyOf`/`oneOf` (alone in its schema but for annotations: interface check).
        case union(UnionDecl.Rule, [JSONValue])
    }

    private static func schemaObject(_ schema: JSONValue, path: String) throws(CodegenError) -> [String: JSONValue] {
        guard let members = schema.objectValue else {
            throw CodegenError(path: path, reason: "a schema must be an object, got \(schema.typeName)")
        }
        return members
    }

    /// What a (non-`$ref`) schema is: an object with properties, a string
    /// enum, or a plain type (items still to read for arrays).
    private func classify(_ members: [String: JSONValue], path: String) throws(CodegenError) -> (Classified, Bool) {
        for rule in [UnionDecl.Rule.anyOf, .oneOf] {
            if let list = members[rule.rawValue]?.arrayValue { return (.union(rule, list), false) }
        }
        if DescriptorSchema.isDescriptor(.object(members)) {
            // `type` is "object", with "null" or not, or absent (interface check).
            return (.plain(.descriptor), members["type"]?.arrayValue?.contains("null") == true)
        }
        var types: [String] = []
        if let type = members["type"] {
            switch type {
            case .string(let name): types = [name]
            case .array(let items):
                for item in items {
                    guard let name = item.stringValue else {
                        throw CodegenError(path: path + ".type", reason: "expected a type name or an array of type names")
                    }
                    types.append(name)
                }
            default:
                throw CodegenError(path: path + ".type", reason: "expected a type name or an array of type names, got \(type.typeName)")
            }
            let known: Set<String> = ["null", "boolean", "integer", "number", "string", "array", "object"]
            for name in types where !known.contains(name) {
                throw CodegenError(path: path + ".type", reason: "unknown type name \"\(name)\"")
            }
        }
        let nullable = types.contains("null")
        let concrete = types.filter { $0 != "null" }

        if let values = members["enum"] {
            guard let list = values.arrayValue, !list.isEmpty else {
                throw CodegenError(path: path + ".enum", reason: "expected a non-empty array")
            }
            let strings = list.compactMap(\.stringValue)
            let allowsNull = list.contains(.null)
            if strings.count + (allowsNull ? 1 : 0) == list.count, !strings.isEmpty,
                concrete.isEmpty || concrete == ["string"]
            {
                return (.enumeration(Self.deduplicated(strings)), nullable || allowsNull)
            }
        }
        guard concrete.count == 1, let only = concrete.first else {
            // No type, only null, or several: free-form.
            return (.plain(.any), nullable && !concrete.isEmpty)
        }
        switch only {
        case "string": return (.plain(.string), nullable)
        case "integer": return (.plain(.integer), nullable)
        case "number": return (.plain(.number), nullable)
        case "boolean": return (.plain(.boolean), nullable)
        case "array": return (.plain(.array(TypeRef(.any))), nullable)
        default:
            if let properties = members["properties"] {
                guard properties.objectValue != nil else {
                    throw CodegenError(path: path + ".properties", reason: "expected an object of schemas, got \(properties.typeName)")
                }
                return (.object, nullable)
            }
            return (.plain(.any), nullable)
        }
    }

    private static func deduplicated(_ values: [String]) -> [String] {
        var seen: Set<String> = []
        return values.filter { seen.insert($0).inserted }
    }

    private static func enumDecl(name: String, description: String?, values: [String]) -> EnumDecl {
        var swiftNames = NameAllocator(reserved: ["init", "rawValue", "allCases", "hashValue", "jsonValue", "validate"])
        var pythonNames = NameAllocator()
        let cases = values.map { value in
            EnumDecl.Case(
                value: value, swiftName: swiftNames.unique(Naming.lowerCamel(value)),
                pythonName: pythonNames.unique(Naming.pythonEscaped(Naming.upperSnake(value))))
        }
        return EnumDecl(name: name, description: description, cases: cases)
    }

    private mutating func buildFields(_ members: [String: JSONValue], owner: String, path: String)
        throws(CodegenError) -> [Field]
    {
        let properties = members["properties"]?.objectValue ?? [:]
        let required = Set(members["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        // `jsonValue`, `validate`: JSONValueConvertible's members every struct
        // has; `checkOwnBounds`: the method of a struct with bounded members.
        var swiftNames = NameAllocator(reserved: ["jsonValue", "validate", "checkOwnBounds"])
        var pythonNames = NameAllocator(reserved: ["self", "to_json", "from_json"])
        var fields: [Field] = []
        for jsonName in properties.keys.sorted() {
            let schema = properties[jsonName] ?? .null
            let memberPath = path + ".properties." + jsonName
            let type = try typeOf(schema, suggestedName: owner + Naming.upperCamel(jsonName), path: memberPath)
            fields.append(Field(
                jsonName: jsonName,
                swiftName: swiftNames.unique(Naming.lowerCamel(jsonName)),
                pythonName: pythonNames.unique(Naming.pythonEscaped(Naming.snake(jsonName))),
                type: type, required: required.contains(jsonName),
                description: schema["description"]?.stringValue,
                defaultValue: schema["default"]))
        }
        return fields
    }

    /// The type of a member or array item; declares the nested struct or
    /// enum it needs, named by its `title` or else `suggestedName`.
    private mutating func typeOf(_ schema: JSONValue, suggestedName: String, path: String) throws(CodegenError) -> TypeRef {
        let members = try Self.schemaObject(schema, path: path)
        if members["$ref"] != nil {
            return try reference(members, path: path, refChain: [])
        }
        let (shape, nullable) = try classify(members, path: path)
        let title = members["title"]?.stringValue.map(Naming.upperCamel)
        let bounds = ValueBounds(members)
        switch shape {
        case .object:
            let name = typeNames.unique(title ?? suggestedName)
            let description = members["description"]?.stringValue
            let slot = append(.structure(StructDecl(name: name, description: description, fields: [])))
            let fields = try buildFields(members, owner: name, path: path)
            declarations[slot] = .structure(StructDecl(name: name, description: description, fields: fields))
            return TypeRef(.named(name), nullable: nullable, bounds: bounds)
        case .enumeration(let values):
            let name = typeNames.unique(title ?? suggestedName)
            append(.enumeration(Self.enumDecl(name: name, description: members["description"]?.stringValue, values: values)))
            return TypeRef(.named(name), nullable: nullable, bounds: bounds)
        case .plain(.array):
            guard let items = members["items"] else {
                return TypeRef(.array(TypeRef(.any)), nullable: nullable, bounds: bounds)
            }
            let item = try typeOf(items, suggestedName: suggestedName + "Item", path: path + ".items")
            return TypeRef(.array(item), nullable: nullable, bounds: bounds)
        case .plain(let plain):
            return TypeRef(plain, nullable: nullable, bounds: bounds)
        case .union(let rule, let list):
            let name = typeNames.unique(title ?? suggestedName)
            try declareUnion(name, description: members["description"]?.stringValue, rule: rule, list: list, path: path)
            return TypeRef(.named(name))
        }
    }

    /// Resolves `{"$ref": "#/$defs/NAME"}` against the root's `$defs`.
    private mutating func reference(_ members: [String: JSONValue], path: String, refChain: [String])
        throws(CodegenError) -> TypeRef
    {
        let refValue = members["$ref"] ?? .null
        let prefix = "#/$defs/"
        guard let ref = refValue.stringValue, ref.hasPrefix(prefix), ref.count > prefix.count else {
            throw CodegenError(path: path + ".$ref", reason: "expected \"#/$defs/NAME\", got \(refValue.jsonText)")
        }
        let key = String(ref.dropFirst(prefix.count))
        guard currentRootKeys.contains(key), let definition = definitions[key] else {
            throw CodegenError(path: path + ".$ref", reason: "\"\(ref)\" refers to nothing: the root schema has no $defs entry \"\(key)\"")
        }
        if refChain.contains(key) {
            throw CodegenError(path: path + ".$ref", reason: "\"\(ref)\" is a cycle of $refs with no object or array in between")
        }
        // A definition that is itself a `$ref`: follow the chain to catch cycles.
        if definition.json["$ref"] != nil {
            let saved = currentRootKeys
            currentRootKeys = definition.rootKeys
            defer { currentRootKeys = saved }
            _ = try reference(definition.json.objectValue ?? [:], path: definition.place, refChain: refChain + [key])
        }
        return TypeRef(.named(definition.typeName))
    }
}
