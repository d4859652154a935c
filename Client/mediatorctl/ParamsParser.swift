import MediatorProtocol

/// Turns the trailing command-line words of `call`, `stream` and `emit` into
/// a JSON value. Pure, so that it can be unit-tested.
///
/// - no words: `{}`;
/// - a single word starting with `{`: that JSON object, as is;
/// - otherwise each word is `key=value` or `key:=json`. A `key:=json` value
///   must be JSON. A `key=value` value is typed by the member's schema when
///   the action declares one (``value(_:key:schema:)``), else it is JSON when
///   it parses as JSON, else the plain string (`n=5` → 5, `ok=true` → true,
///   `name=bob` → "bob", `s="5"` → "5", `e=` → ""). A repeated key: the last
///   one wins.
public enum ParamsParser {
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// The `params` object for a call; `schema` is the action's declared
    /// `params` schema, which types the `key=value` words it names.
    public static func params(_ words: [String], schema: Schema? = nil) throws(Failure) -> JSONValue {
        if isJSONObject(words) {
            let value = try json(words[0])
            guard value.objectValue != nil else { throw Failure("params must be a JSON object") }
            return value
        }
        let properties = schema.map(resolved)?.properties ?? [:]
        var members: [String: JSONValue] = [:]
        for word in words {
            let (key, value) = try pair(word, properties: properties)
            members[key] = value
        }
        return .object(members)
    }

    /// Whether the words are `key=value` words, the only form a schema types
    /// (so the only one worth a `describe`).
    public static func isKeyValue(_ words: [String]) -> Bool {
        !words.isEmpty && !isJSONObject(words)
    }

    /// A single word starting with `{`.
    static func isJSONObject(_ words: [String]) -> Bool {
        words.count == 1 && words[0].first(where: { !$0.isWhitespace }) == "{"
    }

    /// The `data` of an event: a single word that is any JSON value, else the
    /// `key=value` rules; nil without words.
    public static func data(_ words: [String]) throws(Failure) -> JSONValue? {
        if words.isEmpty { return nil }
        if words.count == 1, let value = try? JSONParser.parse(words[0]) { return value }
        if words.count == 1, !words[0].contains("=") {
            throw Failure("event data must be JSON or key=value words: \(words[0])")
        }
        return try params(words)
    }

    /// One `key=value` or `key:=json` word; `properties` are the declared
    /// members' schemas.
    public static func pair(
        _ word: String, properties: [String: Schema] = [:]
    ) throws(Failure) -> (String, JSONValue) {
        guard let equals = word.firstIndex(of: "=") else {
            throw Failure("expected key=value or a JSON object, got \"\(word)\"")
        }
        var key = String(word[..<equals])
        let text = String(word[word.index(after: equals)...])
        let forcedJSON = key.hasSuffix(":")
        if forcedJSON { key.removeLast() }
        guard !key.isEmpty else { throw Failure("empty key in \"\(word)\"") }
        if forcedJSON {
            do {
                return (key, try JSONParser.parse(text))
            } catch {
                throw Failure("\(key): invalid JSON after := (\(error.description))")
            }
        }
        return (key, try value(text, key: key, schema: properties[key]))
    }

    /// A `value` of `key=value`: JSON when it parses, else the string itself.
    public static func value(_ text: String) -> JSONValue {
        (try? JSONParser.parse(text)) ?? .string(text)
    }

    /// A `value` of `key=value` typed by the member's schema, as busctl types
    /// arguments from a signature. The types are the schema's `type`, else
    /// those of its `enum` values; with neither (or no schema), ``value(_:)``
    /// guesses. The text is taken as JSON when it parses as a value of one of
    /// the types other than `string`; otherwise, as the string itself when
    /// `string` is one of them; otherwise it is refused, naming the key and the
    /// types. So `value=1` is "1" for a string, 1 for an integer, and 1 or
    /// "1" for `["integer", "string"]` (JSON first); `note=null` is null for
    /// `["string", "null"]`; object and array members take JSON.
    public static func value(_ text: String, key: String, schema: Schema?) throws(Failure) -> JSONValue {
        guard let schema, let types = declaredTypes(resolved(schema)) else { return value(text) }
        if let parsed = try? JSONParser.parse(text),
            types.contains(where: { $0 != "string" && matches(parsed, type: $0) })
        {
            return parsed
        }
        if types.contains("string") { return .string(text) }
        throw Failure("\(key): expected \(types.joined(separator: " or ")), got \"\(text)\"")
    }

    /// The type names a schema allows: its `type`, else those of its `enum`
    /// values; nil when it says neither.
    static func declaredTypes(_ schema: Schema) -> [String]? {
        if let types = schema.types, !types.isEmpty { return types }
        guard let values = schema.enumValues, !values.isEmpty else { return nil }
        var types: [String] = []
        for value in values where !types.contains(value.typeName) { types.append(value.typeName) }
        return types
    }

    /// Whether `value` is of the JSON Schema type `type` (`number` includes integers).
    static func matches(_ value: JSONValue, type: String) -> Bool {
        value.typeName == type || (type == "number" && value.typeName == "integer")
    }

    /// The schema a chain of `$ref`s ends at. The chain is finite: reading a
    /// schema refuses a cycle of `$ref`s.
    static func resolved(_ schema: Schema) -> Schema {
        var current = schema
        while let next = current.referenced { current = next }
        return current
    }

    /// A JSON document, with the parser's reason on failure.
    public static func json(_ text: String) throws(Failure) -> JSONValue {
        do {
            return try JSONParser.parse(text)
        } catch {
            throw Failure("invalid JSON: \(error.description)")
        }
    }
}
