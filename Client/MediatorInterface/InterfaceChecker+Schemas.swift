import MediatorProtocol

/// The schemas of an interface file: each keyword, type and `$ref`
/// checked, every problem reported with its path.
extension InterfaceChecker {
    /// A params or result schema: the root that its `$ref`s resolve against.
    mutating func checkRootSchema(_ schema: JSONValue, path: String) {
        let definitions = schema["$defs"]?.objectValue ?? [:]
        referencesBarringDescriptors = []
        checkSchema(schema, path: path, rootPath: path, definitions: definitions, depth: 0)
        checkCycles(definitions, rootPath: path)
        for reference in referencesBarringDescriptors {
            guard let target = definitions[reference.name],
                DescriptorSchema.reaches(target, definitions: definitions)
            else { continue }
            report(
                reference.path,
                "refers to \(MemberPath.quoted(reference.name)), which holds a descriptor (\"format\": \"fd\"); "
                    + Self.descriptorPlaces(reference.place))
        }
    }

    /// Why a descriptor cannot be at a place (`place`: where, as `"in an
    /// alternative of \"anyOf\""`). Events carry none (contract section 8)
    /// and interface files declare none; params and results (a stream's
    /// partials included) carry them, in members and array items, where
    /// generated code gives them a typed handle.
    static func descriptorPlaces(_ place: String) -> String {
        "a descriptor cannot be \(place): generated code carries descriptors in members (\"properties\") and array items (\"items\") of params and results"
    }

    /// `descriptorsBarred`: where the schema is, when that is a place no
    /// descriptor may be (``descriptorPlaces(_:)``); nil where one may.
    private mutating func checkSchema(
        _ schema: JSONValue, path: String, rootPath: String, definitions: [String: JSONValue], depth: Int,
        descriptorsBarred: String? = nil
    ) {
        guard depth <= Self.maxSchemaDepth else {
            report(path, "schema is nested too deeply (more than \(Self.maxSchemaDepth) levels)")
            return
        }
        guard let members = schema.objectValue else {
            report(path, "a schema must be an object, got \(MemberPath.shown(schema))")
            return
        }
        for key in sortedKeys(members) where !Self.schemaKeywords.contains(key) {
            report(
                MemberPath.member(path, key),
                "unknown schema keyword; known keywords: " + Self.schemaKeywords.joined(separator: ", "))
        }

        if let type = members["type"] { checkType(type, path: path + ".type") }
        if let format = members["format"] {
            checkDescriptor(format, members, path: path, descriptorsBarred: descriptorsBarred)
        }
        // Generated code has no type for what is below a value of no one type.
        let below = descriptorsBarred ?? (Self.isFreeForm(members) ? "below a schema of no one \"type\" (free-form in generated code)" : nil)

        var propertyNames: Set<String>?
        if let properties = members["properties"] {
            if let declared = properties.objectValue {
                propertyNames = Set(declared.keys)
                for name in sortedKeys(declared) {
                    if let property = declared[name] {
                        checkSchema(
                            property, path: MemberPath.member(path + ".properties", name), rootPath: rootPath,
                            definitions: definitions, depth: depth + 1, descriptorsBarred: below)
                    }
                }
            } else {
                report(path + ".properties", "must be an object of schemas, got \(MemberPath.shown(properties))")
            }
        }

        if let required = members["required"] {
            if let names = required.arrayValue {
                var seen: Set<String> = []
                for (index, item) in names.enumerated() {
                    let itemPath = MemberPath.index(path + ".required", index)
                    guard let name = item.stringValue else {
                        report(itemPath, "must be a string, got \(MemberPath.shown(item))")
                        continue
                    }
                    if !seen.insert(name).inserted {
                        report(itemPath, "\(MemberPath.quoted(name)) is listed twice")
                    } else if members["properties"] == nil || propertyNames.map({ !$0.contains(name) }) == true {
                        // JSON Schema allows it, but no type can be generated for such a member.
                        report(itemPath, "\(MemberPath.quoted(name)) is not declared in \"properties\"")
                    }
                }
            } else {
                report(path + ".required", "must be an array of strings, got \(MemberPath.shown(required))")
            }
        }

        if let items = members["items"] {
            if items.objectValue != nil {
                checkSchema(
                    items, path: path + ".items", rootPath: rootPath, definitions: definitions, depth: depth + 1,
                    descriptorsBarred: below)
            } else {
                report(path + ".items", "must be a schema object, got \(MemberPath.shown(items))")
            }
        }

        if let values = members["enum"] {
            if let list = values.arrayValue {
                if list.isEmpty { report(path + ".enum", "must not be empty") }
            } else {
                report(path + ".enum", "must be an array, got \(MemberPath.shown(values))")
            }
        }

        if let extra = members["additionalProperties"] {
            switch extra {
            case .bool: break
            case .object:
                checkSchema(
                    extra, path: path + ".additionalProperties", rootPath: rootPath, definitions: definitions,
                    depth: depth + 1, descriptorsBarred: below ?? "under \"additionalProperties\"")
            default:
                report(
                    path + ".additionalProperties", "must be a boolean or a schema object, got \(MemberPath.shown(extra))")
            }
        }

        for keyword in Self.numberBoundKeywords {
            if let value = members[keyword], value.doubleValue == nil {
                report(path + "." + keyword, "must be a number, got \(MemberPath.shown(value))")
            }
        }
        for keyword in Self.countBoundKeywords {
            if let value = members[keyword], (value.intValue ?? -1) < 0 {
                report(path + "." + keyword, "must be a non-negative integer, got \(MemberPath.shown(value))")
            }
        }

        for keyword in ["description", "title"] {
            if let value = members[keyword], value.stringValue == nil {
                report(path + "." + keyword, "must be a string, got \(MemberPath.shown(value))")
            }
        }

        checkAlternatives(
            members, path: path, rootPath: rootPath, definitions: definitions, depth: depth,
            descriptorsBarred: descriptorsBarred)

        if let value = members["default"] {
            checkDefault(value, of: members, path: path, definitions: definitions)
        }

        if let declared = members["$defs"] {
            if let entries = declared.objectValue {
                for name in sortedKeys(entries) {
                    guard let entry = entries[name] else { continue }
                    let entryPath = MemberPath.member(path + ".$defs", name)
                    if let earlier = self.definitions[name] {
                        if earlier.json != entry {
                            report(
                                entryPath,
                                "differs from the definition at \(earlier.path); one name is one generated type")
                        }
                    } else {
                        self.definitions[name] = (entryPath, entry)
                    }
                    checkSchema(entry, path: entryPath, rootPath: rootPath, definitions: definitions, depth: depth + 1)
                }
            } else {
                report(path + ".$defs", "must be an object of named schemas, got \(MemberPath.shown(declared))")
            }
        }

        if let reference = members["$ref"] {
            let refPath = path + ".$ref"
            if let text = reference.stringValue {
                if let name = Self.definitionName(text) {
                    if definitions[name] == nil {
                        report(refPath, "refers to nothing: no \(MemberPath.quoted(name)) in the \"$defs\" of \(rootPath)")
                    } else if let descriptorsBarred {
                        referencesBarringDescriptors.append((refPath, name, descriptorsBarred))
                    }
                } else {
                    report(refPath, "must be of the form \"#/$defs/NAME\", got \(MemberPath.quoted(text))")
                }
            } else {
                report(refPath, "must be a string of the form \"#/$defs/NAME\", got \(MemberPath.shown(reference))")
            }
            // `$defs` only holds definitions (a root may be a `$ref` into its
            // own `$defs`); any other keyword would be a second constraint.
            let others = sortedKeys(members).filter {
                !["$ref", "description", "$defs"].contains($0) && Self.schemaKeywords.contains($0)
            }
            if !others.isEmpty {
                report(
                    path,
                    "a schema with \"$ref\" has no other keywords but \"description\" and \"$defs\"; found "
                        + others.map(MemberPath.quoted).joined(separator: ", "))
            }
        }
    }

    /// `anyOf`/`oneOf`: a non-empty array of at most `Schema.maxAlternatives`
    /// schemas (the daemon's bound), alone in its schema but for
    /// annotations: the generated type is the alternatives and nothing else.
    private mutating func checkAlternatives(
        _ members: [String: JSONValue], path: String, rootPath: String, definitions: [String: JSONValue], depth: Int,
        descriptorsBarred: String?
    ) {
        let present = Self.alternativeKeywords.filter { members[$0] != nil }
        guard !present.isEmpty else { return }
        if present.count > 1 {
            report(path, "has both \"anyOf\" and \"oneOf\"; a schema has at most one (a generated type is one choice)")
        }
        let others = sortedKeys(members).filter {
            !Self.alternativeCompanions.contains($0) && Self.schemaKeywords.contains($0)
        }
        if !others.isEmpty {
            report(
                path,
                "a schema with \"\(present[0])\" has no other keywords but \"description\", \"title\", \"default\" and \"$defs\"; found "
                    + others.map(MemberPath.quoted).joined(separator: ", ") + " (put them in each alternative)")
        }
        for keyword in present {
            let keywordPath = path + "." + keyword
            guard let list = members[keyword]?.arrayValue else {
                report(keywordPath, "must be an array of schemas, got \(MemberPath.shown(members[keyword] ?? .null))")
                continue
            }
            if list.isEmpty { report(keywordPath, "must not be empty") }
            if list.count > Schema.maxAlternatives {
                report(keywordPath, "at most \(Schema.maxAlternatives) schemas, got \(list.count)")
            }
            for (index, alternative) in list.enumerated() {
                checkSchema(
                    alternative, path: MemberPath.index(keywordPath, index), rootPath: rootPath,
                    definitions: definitions, depth: depth + 1,
                    descriptorsBarred: descriptorsBarred ?? "in an alternative of \"\(keyword)\"")
            }
        }
    }

    /// `format`: only `"fd"`, a descriptor (``DescriptorSchema``), whose
    /// schema says nothing else about its JSON, `{"$fd": I}`: a `type` of
    /// `"object"` (`null` besides for a nullable one) and annotations.
    private mutating func checkDescriptor(
        _ format: JSONValue, _ members: [String: JSONValue], path: String, descriptorsBarred: String?
    ) {
        guard format == .string(Schema.descriptorFormat) else {
            report(
                path + ".format",
                "unknown format \(MemberPath.shown(format)); the one format is \"fd\", a file descriptor sent with the message")
            return
        }
        if let descriptorsBarred { report(path + ".format", Self.descriptorPlaces(descriptorsBarred)) }
        let others = sortedKeys(members).filter { !DescriptorSchema.keywords.contains($0) }
        if !others.isEmpty {
            report(
                path,
                "a descriptor (\"format\": \"fd\") is {\"$fd\": I} and has no other keywords but \"type\", \"description\" and \"title\"; found "
                    + others.map(MemberPath.quoted).joined(separator: ", "))
        }
        if let type = members["type"], ![["object"], ["object", "null"], ["null", "object"]].contains(Self.typeList(type)) {
            report(path + ".type", "a descriptor's type is \"object\" (or [\"object\", \"null\"]), got \(MemberPath.shown(type))")
        }
    }

    /// A schema whose value generated code holds as free-form JSON: not a
    /// reference, a choice or a descriptor, and of no one `type` but null.
    static func isFreeForm(_ members: [String: JSONValue]) -> Bool {
        guard members["$ref"] == nil, !alternativeKeywords.contains(where: { members[$0] != nil }),
            !DescriptorSchema.isDescriptor(.object(members))
        else { return false }
        return typeList(members["type"] ?? .array([])).filter { $0 != "null" }.count != 1
    }

    /// A `type` keyword's names (one name is a list of one).
    private static func typeList(_ type: JSONValue) -> [String] {
        if let name = type.stringValue { return [name] }
        return type.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// A `default` must be a value of its own schema: generated types take
    /// it for an absent member and send it. Checked by the daemon's own
    /// checker, with the root's `$defs` for the schema's `$ref`s.
    private mutating func checkDefault(
        _ value: JSONValue, of members: [String: JSONValue], path: String, definitions: [String: JSONValue]
    ) {
        var schema = members
        schema["default"] = nil
        if !definitions.isEmpty { schema["$defs"] = .object(definitions) }
        // A schema the daemon refuses is reported where it is wrong (or by ActionSpec last).
        guard let compiled = try? Schema(json: .object(schema)) else { return }
        if let error = compiled.validate(value, path: "default") {
            report(path + ".default", "is not a value of its own schema: " + error.message)
        }
    }

    private mutating func checkType(_ type: JSONValue, path: String) {
        let names: [String]
        switch type {
        case .string(let name):
            names = [name]
        case .array(let items) where !items.isEmpty:
            var collected: [String] = []
            for item in items {
                guard let name = item.stringValue else {
                    report(path, "must be a type name or an array of type names, got \(MemberPath.shown(type))")
                    return
                }
                collected.append(name)
            }
            names = collected
        case .array:
            report(path, "must not be an empty array")
            return
        default:
            report(path, "must be a type name or an array of type names, got \(MemberPath.shown(type))")
            return
        }
        var seen: Set<String> = []
        for name in names {
            if !Self.typeNames.contains(name) {
                report(
                    path,
                    "unknown type name \(MemberPath.quoted(name)); expected one of " + Self.typeNames.joined(separator: ", "))
            } else if !seen.insert(name).inserted {
                report(path, "lists \(MemberPath.quoted(name)) twice")
            }
        }
    }

    /// A cycle of `$defs` entries that are each only a `$ref` to the next
    /// describes no value at all (and would send a generator round for ever);
    /// through an object or an array a cycle is a recursive type, which is fine.
    private mutating func checkCycles(_ definitions: [String: JSONValue], rootPath: String) {
        for start in sortedKeys(definitions) {
            var chain = [start]
            var current = start
            // Each step visits a new entry, so the walk ends within definitions.count steps.
            while let next = definitions[current].flatMap(Self.referencedName), definitions[next] != nil {
                if next == start {
                    // Reported once, at the entry with the smallest name in the cycle.
                    if chain.allSatisfy({ !$0.utf8.lexicographicallyPrecedes(start.utf8) }) {
                        report(
                            MemberPath.member(rootPath + ".$defs", start) + ".$ref",
                            "a cycle of $refs with no object or array between: "
                                + (chain + [start]).joined(separator: " -> "))
                    }
                    break
                }
                if chain.contains(next) { break }  // a cycle that does not pass through start
                chain.append(next)
                current = next
            }
        }
    }
}
