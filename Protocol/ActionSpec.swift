/// One action a component declares in `register` (contract section 6).
///
/// `register` accepts either a bare action name or the object form, so both
/// read into this one type; they compare equal when they say the same thing,
/// which is what a pool needs when it checks that its instances declare equal
/// specs. ``json`` always gives the object form, for `describe`.
public struct ActionSpec: Sendable, Hashable {
    /// The action's name (contract section 3: `[A-Za-z_][A-Za-z0-9_.-]*`,
    /// at most 128 bytes).
    public var name: String
    /// For people: shown by `mediatorctl describe` and in generated code.
    public var description: String?
    /// When present, the daemon checks each call's `params` against it.
    public var params: Schema?
    /// When present, the daemon checks each result (and each partial of a
    /// stream) against it, and answers a mismatch with `invalid_result`.
    public var result: Schema?
    /// `false` keeps the action out of reach of `mediator/open`.
    public var url: Bool?
    /// Our extension (issue 11): `true` says the action answers with a stream
    /// (partials, then a final response), so callers should ask with `more`.
    /// For generated code only: routing does not change.
    public var more: Bool?
    /// Our extension (issue 11): `true` says the action is called without an
    /// id and never answers. For generated code only: routing does not change.
    /// Not `true` together with ``more`` (``init(json:)`` refuses that).
    public var oneway: Bool?

    /// A spec as given; nil members are left out of ``json``. Nothing is
    /// checked here: the daemon checks a spec in `register`.
    public init(
        name: String,
        description: String? = nil,
        params: Schema? = nil,
        result: Schema? = nil,
        url: Bool? = nil,
        more: Bool? = nil,
        oneway: Bool? = nil
    ) {
        self.name = name
        self.description = description
        self.params = params
        self.result = result
        self.url = url
        self.more = more
        self.oneway = oneway
    }

    /// Reads `"name"` or `{"name", "description"?, "params"?, "result"?, "url"?,
    /// "more"?, "oneway"?}`; throws `bad_request` naming the faulty member.
    /// Unknown members are ignored; `null` counts as absent.
    public init(json: JSONValue) throws(MediatorError) {
        switch json {
        case .string(let name):
            try Self.checkName(name)
            self.init(name: name)
        case .object(let members):
            guard let nameValue = members["name"] else {
                throw MediatorError(.badRequest, "action spec: missing member \"name\"")
            }
            guard let name = nameValue.stringValue else {
                throw MediatorError(.badRequest, "action spec: \"name\" must be a string, got \(nameValue.typeName)")
            }
            try Self.checkName(name)
            let context = "action \"\(name)\""

            var description: String?
            if let value = members["description"], !value.isNull {
                guard let text = value.stringValue else {
                    throw MediatorError(.badRequest, "\(context): \"description\" must be a string, got \(value.typeName)")
                }
                description = text
            }

            let url = try Self.flag(members["url"], named: "url", context: context)
            let more = try Self.flag(members["more"], named: "more", context: context)
            let oneway = try Self.flag(members["oneway"], named: "oneway", context: context)
            if more == true, oneway == true {
                throw MediatorError(.badRequest, "\(context): \"more\" and \"oneway\" cannot both be true")
            }

            let params = try Self.schema(members["params"], named: "params", context: context)
            let result = try Self.schema(members["result"], named: "result", context: context)
            self.init(
                name: name, description: description, params: params, result: result, url: url, more: more,
                oneway: oneway)
        default:
            throw MediatorError(
                .badRequest, "an action spec must be an action name or an object, got \(json.typeName)")
        }
    }

    /// The object form, without the members that are absent.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["name": .string(name)]
        if let description { members["description"] = .string(description) }
        if let params { members["params"] = params.json }
        if let result { members["result"] = result.json }
        if let url { members["url"] = .bool(url) }
        if let more { members["more"] = .bool(more) }
        if let oneway { members["oneway"] = .bool(oneway) }
        return .object(members)
    }

    /// Whether `mediator/open` may call this action: not when its name
    /// begins with `native` or its spec says `"url": false`.
    public var reachableByURL: Bool {
        url != false && !name.utf8.starts(with: "native".utf8)
    }

    // MARK: - Helpers

    private static func checkName(_ name: String) throws(MediatorError) {
        guard NameRules.isValidAction(name) else {
            throw MediatorError(
                .badRequest,
                "invalid action name \"\(name)\": expected [A-Za-z_][A-Za-z0-9_.-]*, at most \(NameRules.maxNameBytes) bytes"
            )
        }
    }

    /// Reads an optional boolean member; `null` counts as absent.
    private static func flag(_ value: JSONValue?, named member: String, context: String) throws(MediatorError) -> Bool? {
        guard let value, !value.isNull else { return nil }
        guard let flag = value.boolValue else {
            throw MediatorError(.badRequest, "\(context): \"\(member)\" must be a boolean, got \(value.typeName)")
        }
        return flag
    }

    /// Reads an optional schema member; `null` counts as absent.
    private static func schema(_ value: JSONValue?, named member: String, context: String) throws(MediatorError)
        -> Schema?
    {
        guard let value, !value.isNull else { return nil }
        do {
            return try Schema(json: value, path: member)
        } catch {
            throw MediatorError(.badRequest, "\(context): \(error.message)")
        }
    }
}
