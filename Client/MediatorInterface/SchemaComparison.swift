import MediatorProtocol

/// Compares an old and a new params (or result) schema, as JSON, following
/// `$ref`s into the `$defs` of each side's root.
struct SchemaComparison {
    /// Params are what callers send: narrowing them breaks callers. Results
    /// are what callers read: widening them breaks callers.
    enum Direction { case params, result }

    let direction: Direction
    let oldRoot: JSONValue
    let newRoot: JSONValue
    private(set) var changes: [InterfaceChange] = []
    /// The pairs of definitions being compared further up, so that a
    /// recursive type is compared once.
    private var comparing: Set<[String]> = []

    /// Deeper schemas are not compared (the check refuses them anyway).
    private static let maxDepth = 64
    private static let allKinds: Set<String> = ["null", "boolean", "integer", "number", "string", "array", "object"]

    init(direction: Direction, oldRoot: JSONValue, newRoot: JSONValue) {
        self.direction = direction
        self.oldRoot = oldRoot
        self.newRoot = newRoot
    }

    mutating func compareRoots(path: String) {
        compare(oldRoot, newRoot, path: path, depth: 0)
    }

    private var memberNoun: String { direction == .params ? "param" : "result member" }

    private mutating func note(_ breaking: Bool, _ path: String, _ change: String) {
        changes.append(InterfaceChange(breaking: breaking, member: path, change: change))
    }

    /// A narrower new schema breaks params; a wider one breaks results.
    private func breaks(_ shift: Shift) -> Bool {
        switch shift {
        case .narrowed: direction == .params
        case .widened: direction == .result
        case .changed: true
        }
    }

    private enum Shift { case narrowed, widened, changed }

    private mutating func compare(_ oldSchema: JSONValue, _ newSchema: JSONValue, path: String, depth: Int) {
        guard depth <= Self.maxDepth else { return }
        let (old, oldName) = Self.resolve(oldSchema, in: oldRoot)
        let (new, newName) = Self.resolve(newSchema, in: newRoot)
        var pair: [String]?
        if oldName != nil || newName != nil {
            let key = [oldName ?? "", newName ?? ""]
            guard !comparing.contains(key) else { return }
            comparing.insert(key)
            pair = key
        }
        defer { if let pair { comparing.remove(pair) } }
        guard old != new else { return }

        // A descriptor travels beside the JSON, not in it: neither side's
        // code reads the other's value, whatever the direction.
        let descriptor = (DescriptorSchema.isDescriptor(old), DescriptorSchema.isDescriptor(new))
        if descriptor.0 != descriptor.1 {
            note(
                true, path,
                descriptor.1
                    ? "became a descriptor (\"format\": \"fd\"), was type \(Self.typeText(old))"
                    : "no longer a descriptor (\"format\": \"fd\"), now type \(Self.typeText(new))")
            return
        }

        if Self.alternatives(old) != nil || Self.alternatives(new) != nil {
            compareAlternatives(old, new, path: path, depth: depth)
            return
        }

        // type
        // Params are an object on the wire whatever the root schema says.
        let wireKinds: Set<String>? = depth == 0 && direction == .params ? ["object"] : nil
        let oldKinds = Self.kinds(old, absent: wireKinds)
        let newKinds = Self.kinds(new, absent: wireKinds)
        if oldKinds != newKinds {
            let shift: Shift =
                oldKinds.isSubset(of: newKinds) ? .widened : newKinds.isSubset(of: oldKinds) ? .narrowed : .changed
            let (from, to) = (Self.typeText(old), Self.typeText(new))
            let change: String
            if newKinds == oldKinds.union(["null"]) {
                change = "made nullable (type \(from) to \(to))"
            } else if oldKinds == newKinds.union(["null"]) {
                change = "no longer nullable (type \(from) to \(to))"
            } else {
                let verb = shift == .narrowed ? "narrowed" : shift == .widened ? "widened" : "changed"
                change = "type \(verb) from \(from) to \(to)"
            }
            note(breaks(shift), path + ".type", change)
            // Unrelated types: what is below no longer compares.
            if shift == .changed { return }
        }

        compareEnums(old, new, path: path)
        compareBounds(old, new, path: path)
        if !oldKinds.intersection(newKinds).isDisjoint(with: ["object"]) {
            compareProperties(old, new, path: path, depth: depth)
        }
        if !oldKinds.intersection(newKinds).isDisjoint(with: ["array"]) {
            compare(old["items"] ?? [:], new["items"] ?? [:], path: path + ".items", depth: depth + 1)
        }
    }

    /// `anyOf`/`oneOf`, alternative by alternative in their order (a
    /// reordered list reads as changed alternatives). Another alternative in
    /// `anyOf` widens and one less narrows; in `oneOf` either may do both (a
    /// value may now match two, or only the one removed), so it is a change.
    /// `anyOf` to `oneOf` narrows (a value matching two is refused).
    private mutating func compareAlternatives(_ old: JSONValue, _ new: JSONValue, path: String, depth: Int) {
        guard let (oldKeyword, oldList) = Self.alternatives(old) else {
            note(breaks(.changed), path, "became a choice of alternatives (\(Self.alternatives(new)?.keyword ?? ""))")
            return
        }
        guard let (newKeyword, newList) = Self.alternatives(new) else {
            note(breaks(.changed), path, "no longer a choice of alternatives (\(oldKeyword))")
            return
        }
        if oldKeyword != newKeyword {
            note(breaks(oldKeyword == "anyOf" ? .narrowed : .widened), path + "." + newKeyword, "\(oldKeyword) became \(newKeyword)")
        }
        for index in 0..<min(oldList.count, newList.count) {
            compare(oldList[index], newList[index], path: MemberPath.index(path + "." + newKeyword, index), depth: depth + 1)
        }
        let widening = newKeyword == "anyOf"
        for index in oldList.count..<max(oldList.count, newList.count) {
            note(breaks(widening ? .widened : .changed), MemberPath.index(path + "." + newKeyword, index), "alternative added")
        }
        for index in newList.count..<max(oldList.count, newList.count) {
            note(breaks(widening ? .narrowed : .changed), MemberPath.index(path + "." + oldKeyword, index), "alternative removed")
        }
    }

    /// The schema's `anyOf` or `oneOf` and its list (the check allows one of them).
    private static func alternatives(_ schema: JSONValue) -> (keyword: String, list: [JSONValue])? {
        for keyword in InterfaceChecker.alternativeKeywords {
            if let list = schema[keyword]?.arrayValue { return (keyword, list) }
        }
        return nil
    }

    /// The keywords that bound a value from below, and those from above:
    /// raising a lower bound or adding one narrows, and the reverse widens.
    private static let lowerBounds = ["minimum", "exclusiveMinimum", "minLength", "minItems"]
    private static let upperBounds = ["maximum", "exclusiveMaximum", "maxLength", "maxItems"]

    /// Numeric bounds and `const` by their rule.
    private mutating func compareBounds(_ old: JSONValue, _ new: JSONValue, path: String) {
        for keyword in Self.lowerBounds + Self.upperBounds {
            let (from, to) = (old[keyword], new[keyword])
            guard from != to else { continue }
            let member = path + "." + keyword
            let raised: Bool
            switch (from?.doubleValue, to?.doubleValue) {
            case (nil, nil): continue
            case (nil, .some):
                note(breaks(.narrowed), member, "\(keyword) \(to.map(MemberPath.shown) ?? "") added")
                continue
            case (.some, nil):
                note(breaks(.widened), member, "\(keyword) removed")
                continue
            case (.some(let a), .some(let b)):
                guard a != b else { continue }
                raised = b > a
            }
            let narrowed = raised == Self.lowerBounds.contains(keyword)
            let (shownFrom, shownTo) = (from.map(MemberPath.shown) ?? "", to.map(MemberPath.shown) ?? "")
            note(
                breaks(narrowed ? .narrowed : .widened), member,
                "\(keyword) \(raised ? "raised" : "lowered") from \(shownFrom) to \(shownTo)")
        }
        let (from, to) = (old["const"], new["const"])
        guard from != to else { return }
        switch (from, to) {
        case (nil, .some): note(breaks(.narrowed), path + ".const", "const added")
        case (.some, nil): note(breaks(.widened), path + ".const", "const removed")
        default: note(breaks(.changed), path + ".const", "const changed")
        }
    }

    private mutating func compareEnums(_ old: JSONValue, _ new: JSONValue, path: String) {
        let oldValues = old["enum"]?.arrayValue
        let newValues = new["enum"]?.arrayValue
        let member = path + ".enum"
        switch (oldValues, newValues) {
        case (nil, nil):
            return
        case (nil, .some(let values)):
            note(breaks(.narrowed), member, "enum added: only \(Self.list(values)) allowed")
        case (.some, nil):
            note(breaks(.widened), member, "enum removed: any value allowed")
        case (.some(let oldList), .some(let newList)):
            let removed = oldList.filter { !newList.contains($0) }
            let added = newList.filter { !oldList.contains($0) }
            switch (removed.isEmpty, added.isEmpty) {
            case (true, true):
                return  // only the order changed
            case (false, true):
                note(breaks(.narrowed), member, "enum values removed: \(Self.list(removed))")
            case (true, false):
                note(breaks(.widened), member, "enum values added: \(Self.list(added))")
            case (false, false):
                note(breaks(.changed), member, "enum values removed: \(Self.list(removed)); added: \(Self.list(added))")
            }
        }
    }

    private mutating func compareProperties(_ old: JSONValue, _ new: JSONValue, path: String, depth: Int) {
        let oldProperties = old["properties"]?.objectValue ?? [:]
        let newProperties = new["properties"]?.objectValue ?? [:]
        let oldRequired = Set((old["required"]?.arrayValue ?? []).compactMap(\.stringValue))
        let newRequired = Set((new["required"]?.arrayValue ?? []).compactMap(\.stringValue))
        let newForbidsOthers = new["additionalProperties"] == .bool(false)
        let oldForbidsOthers = old["additionalProperties"] == .bool(false)
        let names = Set(oldProperties.keys).union(newProperties.keys)
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for name in names {
            let member = MemberPath.member(path + ".properties", name)
            switch (oldProperties[name], newProperties[name], direction) {
            case (nil, nil, _):
                continue
            case (.some, nil, .params):
                if newForbidsOthers {
                    note(true, member, "param removed, and \"additionalProperties\" is false: callers that still send it are refused")
                } else {
                    note(false, member, "param removed (callers that still send it are not refused)")
                }
            case (.some, nil, .result):
                note(true, member, "result member removed")
            case (nil, .some, .params):
                if newRequired.contains(name) {
                    note(true, member, "new required param")
                } else {
                    note(false, member, "new optional param")
                }
            case (nil, .some, .result):
                note(false, member, newRequired.contains(name) ? "new result member" : "new optional result member")
            case (.some(let oldSchema), .some(let newSchema), _):
                let wasRequired = oldRequired.contains(name)
                let isRequired = newRequired.contains(name)
                if wasRequired != isRequired {
                    // A required param narrows what callers may send; an
                    // optional result member widens what they may read.
                    note(
                        breaks(isRequired ? .narrowed : .widened), member,
                        "\(memberNoun) made \(isRequired ? "required" : "optional")")
                }
                compare(oldSchema, newSchema, path: member, depth: depth + 1)
            }
        }
        // Results: members that are not declared are ignored by typed callers, so only params count.
        guard direction == .params else { return }
        if newForbidsOthers && !oldForbidsOthers {
            note(true, path + ".additionalProperties", "made false: params that are not declared are refused")
        } else if oldForbidsOthers && !newForbidsOthers {
            note(false, path + ".additionalProperties", "no longer false: params that are not declared are accepted")
        } else if let oldExtra = old["additionalProperties"], let newExtra = new["additionalProperties"],
            oldExtra.objectValue != nil, newExtra.objectValue != nil
        {
            compare(oldExtra, newExtra, path: path + ".additionalProperties", depth: depth + 1)
        }
    }

    // MARK: - Helpers

    /// The schema a `$ref` chain ends at (and the first definition's name),
    /// or the schema itself. A reference to nothing counts as `{}`.
    private static func resolve(_ schema: JSONValue, in root: JSONValue) -> (JSONValue, String?) {
        var current = schema
        var firstName: String?
        let definitions = root["$defs"]?.objectValue ?? [:]
        // A chain longer than the definitions is a cycle; the check refuses those.
        for _ in 0...definitions.count {
            guard let name = InterfaceChecker.referencedName(current) else { return (current, firstName) }
            if firstName == nil { firstName = name }
            guard let target = definitions[name] else { return ([:], firstName) }
            current = target
        }
        return ([:], firstName)
    }

    /// The kinds of value a schema's `type` allows (every kind when absent);
    /// `number` allows integers.
    private static func kinds(_ schema: JSONValue, absent: Set<String>?) -> Set<String> {
        let names: [String]
        switch schema["type"] {
        case .string(let name)?: names = [name]
        case .array(let items)?: names = items.compactMap(\.stringValue)
        default: return absent ?? allKinds
        }
        var kinds = Set(names).intersection(allKinds)
        if kinds.contains("number") { kinds.insert("integer") }
        return kinds
    }

    private static func typeText(_ schema: JSONValue) -> String {
        schema["type"].map(MemberPath.shown) ?? "any"
    }

    private static func list(_ values: [JSONValue]) -> String {
        MemberPath.shown(.array(values))
    }
}
