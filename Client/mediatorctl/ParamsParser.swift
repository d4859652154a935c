import MediatorProtocol

/// Turns the trailing command-line words of `call`, `stream` and `emit` into
/// a JSON value. Pure, so that it can be unit-tested.
///
/// - no words: `{}`;
/// - a single word starting with `{`: that JSON object, as is;
/// - otherwise each word is `key=value`: the value is JSON when it parses as
///   JSON, else the plain string (`n=5` → 5, `ok=true` → true, `name=bob` →
///   "bob", `s="5"` → "5", `e=` → ""). A repeated key: the last one wins.
public enum ParamsParser {
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// The `params` object for a call.
    public static func params(_ words: [String]) throws(Failure) -> JSONValue {
        if words.count == 1, let first = words[0].first(where: { !$0.isWhitespace }), first == "{" {
            let value = try json(words[0])
            guard value.objectValue != nil else { throw Failure("params must be a JSON object") }
            return value
        }
        var members: [String: JSONValue] = [:]
        for word in words {
            let (key, value) = try pair(word)
            members[key] = value
        }
        return .object(members)
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

    /// One `key=value` word.
    public static func pair(_ word: String) throws(Failure) -> (String, JSONValue) {
        guard let equals = word.firstIndex(of: "=") else {
            throw Failure("expected key=value or a JSON object, got \"\(word)\"")
        }
        let key = String(word[..<equals])
        guard !key.isEmpty else { throw Failure("empty key in \"\(word)\"") }
        return (key, value(String(word[word.index(after: equals)...])))
    }

    /// A `value` of `key=value`: JSON when it parses, else the string itself.
    public static func value(_ text: String) -> JSONValue {
        (try? JSONParser.parse(text)) ?? .string(text)
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
