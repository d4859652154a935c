import MediatorProtocol

/// Collects every problem of one interface file, walking its JSON itself
/// rather than stopping at the first error as `ActionSpec(json:)` and
/// `Schema(json:)` do. Those still run last on each action that passed, so
/// that nothing they refuse can pass here.
struct InterfaceChecker {
    /// The members an interface file has.
    static let fileMembers = ["target", "description", "actions"]
    /// The members `describe` adds, so that its output is an interface file.
    static let describeMembers = ["mode", "state", "calls_served", "instances", "activation", "uptime_s"]
    static let actionMembers = ["name", "description", "params", "result", "url", "more", "oneway"]
    static let schemaKeywords = [
        "type", "properties", "required", "items", "enum", "additionalProperties", "description", "$defs", "$ref",
        "title", "const", "default", "format",
    ] + numberBoundKeywords + countBoundKeywords + alternativeKeywords
    /// Each alternative of one is a case of a generated enum (Swift) or
    /// Union (Python); so a schema with one has no other constraint.
    static let alternativeKeywords = ["anyOf", "oneOf"]
    /// The keywords beside `anyOf`/`oneOf`: none that constrains the value.
    static let alternativeCompanions = ["anyOf", "oneOf", "description", "title", "$defs", "default"]
    /// Bounds the daemon checks and generated types check too (issue 24,
    /// point 14).
    static let numberBoundKeywords = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
    static let countBoundKeywords = ["minLength", "maxLength", "minItems", "maxItems"]
    static let typeNames = ["null", "boolean", "integer", "number", "string", "array", "object"]
    /// As `Schema` refuses deeper schemas, so does the check.
    static let maxSchemaDepth = 64

    let file: String
    private(set) var problems: [InterfaceProblem] = []
    /// Every `$defs` entry seen so far, by name: one name is one generated type,
    /// so two different definitions under one name are a problem.
    var definitions: [String: (path: String, json: JSONValue)] = [:]
    /// The `$ref`s met where no descriptor may be, with why: each is a
    /// problem when its definition holds one (known once the root is read).
    var referencesBarringDescriptors: [(path: String, name: String, place: String)] = []

    init(file: String) {
        self.file = file
    }

    mutating func report(_ member: String, _ reason: String) {
        problems.append(InterfaceProblem(file: file, member: member, reason: reason))
    }

    // MARK: - The file

    /// Checks the whole file; returns what could be read when nothing was wrong.
    mutating func checkFile(_ json: JSONValue) -> (target: String, description: String?, actions: [ActionSpec])? {
        guard let members = json.objectValue else {
            report("", "an interface file must be a JSON object, got \(json.typeName)")
            return nil
        }
        for name in sortedKeys(members)
        where !Self.fileMembers.contains(name) && !Self.describeMembers.contains(name) {
            report(
                MemberPath.member("", name),
                "unknown member; known members: target, description, actions (and "
                    + Self.describeMembers.joined(separator: ", ") + ", which describe adds)")
        }

        var target: String?
        if let value = members["target"] {
            if let name = value.stringValue {
                if NameRules.isValidTarget(name) {
                    target = name
                } else {
                    report(
                        "target",
                        "invalid target name \(MemberPath.quoted(name)): expected [A-Za-z][A-Za-z0-9_.-]*, at most \(NameRules.maxNameBytes) bytes"
                    )
                }
            } else {
                report("target", "must be a string, got \(MemberPath.shown(value))")
            }
        } else {
            report("target", "is required")
        }

        var description: String?
        if let value = members["description"], !value.isNull {
            if let text = value.stringValue { description = text } else {
                report("description", "must be a string, got \(MemberPath.shown(value))")
            }
        }

        var actions: [ActionSpec] = []
        if let value = members["actions"] {
            if let items = value.arrayValue {
                var firstPathOfName: [String: String] = [:]
                for (index, item) in items.enumerated() {
                    let path = MemberPath.index("actions", index)
                    let before = problems.count
                    let (name, spec) = checkAction(item, path: path)
                    if let name {
                        if let first = firstPathOfName[name] {
                            report(
                                item.stringValue == nil ? path + ".name" : path,
                                "action \(MemberPath.quoted(name)) is declared twice (first at \(first))")
                        } else {
                            firstPathOfName[name] = path
                        }
                    }
                    if let spec, problems.count == before { actions.append(spec) }
                }
            } else {
                report("actions", "must be an array of action names or specs, got \(MemberPath.shown(value))")
            }
        } else {
            report("actions", "is required")
        }

        guard problems.isEmpty, let target else { return nil }
        return (target, description, actions)
    }

    // MARK: - One action

    /// Checks one action spec; returns its name when it has a valid one, and
    /// the spec when nothing was wrong with it.
    private mutating func checkAction(_ value: JSONValue, path: String) -> (name: String?, spec: ActionSpec?) {
        let before = problems.count
        var name: String?
        switch value {
        case .string(let text):
            name = checkName(text, path: path)
        case .object(let members):
            for key in sortedKeys(members) where !Self.actionMembers.contains(key) {
                report(
                    MemberPath.member(path, key),
                    "unknown member of an action spec; known members: " + Self.actionMembers.joined(separator: ", "))
            }
            if let nameValue = members["name"] {
                if let text = nameValue.stringValue {
                    name = checkName(text, path: path + ".name")
                } else {
                    report(path + ".name", "must be a string, got \(MemberPath.shown(nameValue))")
                }
            } else {
                report(path + ".name", "is required")
            }
            if let value = present(members["description"]), value.stringValue == nil {
                report(path + ".description", "must be a string, got \(MemberPath.shown(value))")
            }
            var flags: [String: Bool] = [:]
            for flag in ["url", "more", "oneway"] {
                guard let value = present(members[flag]) else { continue }
                if let bool = value.boolValue { flags[flag] = bool } else {
                    report(MemberPath.member(path, flag), "must be a boolean, got \(MemberPath.shown(value))")
                }
            }
            if flags["more"] == true && flags["oneway"] == true {
                report(path, "\"more\" and \"oneway\" exclude each other: a oneway action never answers")
            }
            for member in ["params", "result"] {
                guard let schema = present(members[member]) else { continue }
                let schemaPath = path + "." + member
                if member == "result" && flags["oneway"] == true {
                    report(schemaPath, "a oneway action never answers, so it has no result")
                }
                checkRootSchema(schema, path: schemaPath)
            }
        default:
            report(path, "an action spec must be an action name or an object, got \(value.typeName)")
        }
        guard problems.count == before else { return (name, nil) }
        do {
            return (name, try ActionSpec(json: value))
        } catch {
            report(path, error.message)
            return (name, nil)
        }
    }

    private mutating func checkName(_ name: String, path: String) -> String? {
        guard NameRules.isValidAction(name) else {
            report(
                path,
                "invalid action name \(MemberPath.quoted(name)): expected [A-Za-z_][A-Za-z0-9_.-]*, at most \(NameRules.maxNameBytes) bytes"
            )
            return nil
        }
        return name
    }

    // MARK: - Helpers

    /// `NAME` of `#/$defs/NAME`; nil for any other form.
    static func definitionName(_ reference: String) -> String? {
        let prefix = "#/$defs/"
        guard reference.hasPrefix(prefix) else { return nil }
        let name = String(reference.dropFirst(prefix.count))
        guard !name.isEmpty, !name.contains("/"), !name.contains("~") else { return nil }
        return name
    }

    /// The definition a schema is only a reference to.
    static func referencedName(_ schema: JSONValue) -> String? {
        schema["$ref"]?.stringValue.flatMap(definitionName)
    }

    func sortedKeys(_ members: [String: JSONValue]) -> [String] {
        members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// A member that is there and not null (null counts as absent, as in `ActionSpec`).
    func present(_ value: JSONValue?) -> JSONValue? {
        guard let value, !value.isNull else { return nil }
        return value
    }
}
