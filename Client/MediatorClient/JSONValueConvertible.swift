import MediatorProtocol

/// A `Codable` type that also converts itself to and from a `JSONValue`
/// directly: what the types of generated interfaces adopt
/// (`mediatorctl generate`), so that their typed calls skip Foundation's
/// JSON coders.
///
/// Why: a typed call through `JSONEncoder`/`JSONDecoder` makes four trips
/// through them per round trip (params and result, on each side), about
/// 1 µs each, more than the daemon's whole routing of the call. The
/// library parses every frame into a `JSONValue` anyway; a generated
/// conversion from there is a few field reads. The two forms must agree:
/// `init(jsonValue:)` accepts what `init(from:)` decodes, and `jsonValue`
/// is what `encode(to:)` writes.
///
/// The typed calls and actions of ``MediatorClient``, ``Component`` and
/// ``CallContext`` take this path when both params and result conform, and
/// the `Codable` one otherwise.
public protocol JSONValueConvertible: Codable, Sendable {
    /// Reads the value from `jsonValue`, accepting what `init(from:)` would
    /// decode from the same JSON.
    ///
    /// - Throws: a ``JSONConversionError`` naming where the value does not
    ///   fit the type; a typed action answers it as `invalid_params`, a
    ///   typed call throws it as `invalid_result`.
    init(jsonValue: JSONValue) throws(JSONConversionError)
    /// The value as JSON: what `encode(to:)` would write.
    var jsonValue: JSONValue { get }
    /// Appends the JSON text of ``jsonValue`` (byte for byte what its
    /// `encode(into:)` writes) without building the value first: the typed
    /// calls send params and results this way. Generated types write their
    /// members directly; the default goes through ``jsonValue``.
    func encodeJSON(into output: inout [UInt8])
    /// Checks the bounds the interface's schema puts on the value
    /// (`minimum`, `maxLength`, `minItems`, `const`, ...), nested values
    /// included: the typed calls check params so before sending them.
    /// Generated types whose schema has bounds implement it (and check their
    /// own members as they decode); the default checks nothing.
    func validate() throws(JSONConversionError)
}

extension JSONValueConvertible {
    @inlinable
    public func encodeJSON(into output: inout [UInt8]) {
        jsonValue.encode(into: &output)
    }

    @inlinable
    public func validate() throws(JSONConversionError) {}
}

/// A value that does not have the shape its Swift type needs; `path` says
/// where, from the outermost value (`["notes", "2", "id"]`).
public struct JSONConversionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where, from the outermost value: member names and array indexes
    /// (`["notes", "2", "id"]`); empty for the outermost value itself.
    public var path: [String]
    /// What the type needed there (`"an integer"`, `"at most 1"`).
    public var expected: String
    /// A short sample of what was there (`"missing"` for an absent member).
    public var found: String

    /// An error at `path` (empty: at the outermost value).
    public init(path: [String] = [], expected: String, found: String) {
        self.path = path
        self.expected = expected
        self.found = found
    }

    /// An error at the outermost value, with ``found`` a short sample of
    /// `value` (``sample(_:)``).
    public init(expected: String, got value: JSONValue) {
        self.init(expected: expected, found: Self.sample(value))
    }

    /// `PATH: expected EXPECTED, found FOUND`, the path joined with dots
    /// (`notes.2.id: expected an integer, found "x"`).
    public var description: String {
        (path.isEmpty ? "" : path.joined(separator: ".") + ": ") + "expected \(expected), found \(found)"
    }

    /// The same error one level further in (`key` is the member or index).
    func inside(_ key: String) -> JSONConversionError {
        var error = self
        error.path.insert(key, at: 0)
        return error
    }

    /// A short sample of a value for `found` (at most 48 bytes of its JSON, then `...`).
    public static func sample(_ value: JSONValue) -> String {
        let text = value.jsonText
        return text.utf8.count <= 48 ? text : String(text.prefix(48)) + "..."
    }
}

/// What generated `init(jsonValue:)`s call for each member, with the same
/// rules as their `Codable` forms.
public enum JSONConversion {
    /// Writes the commas between an object's members for generated
    /// `encodeJSON(into:)`s, which write the members in `JSONValue`'s
    /// order (by name) and skip absent optional ones.
    public struct ObjectMembers {
        @usableFromInline var isFirst = true

        /// Before the first member: no comma is written before it.
        @inlinable
        public init() {}

        /// Appends the separator, if a member came before, and `nameAndColon`:
        /// the member's name as JSON text followed by `:`.
        @inlinable
        public mutating func next(_ nameAndColon: StaticString, into output: inout [UInt8]) {
            if !isFirst { output.append(UInt8(ascii: ",")) }
            isFirst = false
            nameAndColon.withUTF8Buffer { output.append(contentsOf: $0) }
        }
    }

    /// The members of an object, or the error for `typeName`.
    public static func members(_ value: JSONValue, of typeName: String) throws(JSONConversionError) -> [String: JSONValue] {
        guard case .object(let members) = value else {
            throw JSONConversionError(expected: "an object (\(typeName))", got: value)
        }
        return members
    }

    /// A member that must be present and not null (`decode(T.self, ...)`).
    public static func required<T: JSONValueConvertible>(
        _ members: [String: JSONValue], _ key: String
    ) throws(JSONConversionError) -> T {
        guard let value = members[key] else {
            throw JSONConversionError(path: [key], expected: "a member \(key)", found: "missing")
        }
        return try convert(value, key)
    }

    /// A member that must be present and may be null (`decode(T?.self, ...)`).
    public static func requiredNullable<T: JSONValueConvertible>(
        _ members: [String: JSONValue], _ key: String
    ) throws(JSONConversionError) -> T? {
        guard let value = members[key] else {
            throw JSONConversionError(path: [key], expected: "a member \(key)", found: "missing")
        }
        if case .null = value { return nil }
        return try convert(value, key) as T
    }

    /// A member that may be absent or null (`decodeIfPresent`).
    public static func optional<T: JSONValueConvertible>(
        _ members: [String: JSONValue], _ key: String
    ) throws(JSONConversionError) -> T? {
        guard let value = members[key] else { return nil }
        if case .null = value { return nil }
        return try convert(value, key) as T
    }

    private static func convert<T: JSONValueConvertible>(_ value: JSONValue, _ key: String) throws(JSONConversionError) -> T {
        do {
            return try T(jsonValue: value)
        } catch {
            throw error.inside(key)
        }
    }
}

/// A free-form member of a generated type: the value itself, unchecked.
extension JSONValue: JSONValueConvertible {
    /// The value, as it is.
    public init(jsonValue: JSONValue) { self = jsonValue }
    /// The value itself.
    public var jsonValue: JSONValue { self }
    @inlinable
    public func encodeJSON(into output: inout [UInt8]) { encode(into: &output) }
}

/// A JSON string.
extension String: JSONValueConvertible {
    /// The text of a JSON string.
    ///
    /// - Throws: ``JSONConversionError`` (`expected a string`) for any other value.
    public init(jsonValue: JSONValue) throws(JSONConversionError) {
        guard case .string(let text) = jsonValue else { throw JSONConversionError(expected: "a string", got: jsonValue) }
        self = text
    }

    /// The text as a JSON string.
    public var jsonValue: JSONValue { .string(self) }
    @inlinable
    public func encodeJSON(into output: inout [UInt8]) { JSONValue.encodeString(self, into: &output) }
}

/// A JSON `true` or `false`.
extension Bool: JSONValueConvertible {
    /// The flag of a JSON boolean.
    ///
    /// - Throws: ``JSONConversionError`` (`expected a boolean`) for any other
    ///   value (`0` and `"true"` included).
    public init(jsonValue: JSONValue) throws(JSONConversionError) {
        guard case .bool(let flag) = jsonValue else { throw JSONConversionError(expected: "a boolean", got: jsonValue) }
        self = flag
    }

    /// The flag as a JSON boolean.
    public var jsonValue: JSONValue { .bool(self) }
    @inlinable
    public func encodeJSON(into output: inout [UInt8]) { jsonValue.encode(into: &output) }
}

/// A JSON integer (`integer` in a schema).
extension Int: JSONValueConvertible {
    /// An integer, or a number with no fraction that fits (JSON does not
    /// tell `1.0` from `1`).
    ///
    /// - Throws: ``JSONConversionError`` (`expected an integer`) for a
    ///   fraction, a number out of `Int`'s range, or any other value.
    public init(jsonValue: JSONValue) throws(JSONConversionError) {
        switch jsonValue {
        case .int(let number):
            guard let exact = Int(exactly: number) else { throw JSONConversionError(expected: "an integer", got: jsonValue) }
            self = exact
        case .double(let number):
            guard let exact = Int(exactly: number) else { throw JSONConversionError(expected: "an integer", got: jsonValue) }
            self = exact
        default:
            throw JSONConversionError(expected: "an integer", got: jsonValue)
        }
    }

    /// The number as a JSON integer.
    public var jsonValue: JSONValue { .int(Int64(self)) }
    @inlinable
    public func encodeJSON(into output: inout [UInt8]) { jsonValue.encode(into: &output) }
}

/// A JSON number (`number` in a schema).
extension Double: JSONValueConvertible {
    /// An integer or a number with a fraction.
    ///
    /// - Throws: ``JSONConversionError`` (`expected a number`) for any other value.
    public init(jsonValue: JSONValue) throws(JSONConversionError) {
        switch jsonValue {
        case .int(let number): self = Double(number)
        case .double(let number): self = number
        default: throw JSONConversionError(expected: "a number", got: jsonValue)
        }
    }

    /// A whole number in Int64's range is written as an integer, as
    /// JSONEncoder writes `2.0` as `2` (but `-0.0` keeps its sign).
    public var jsonValue: JSONValue {
        if let whole = Int64(exactly: self), !(self == 0 && sign == .minus) { return .int(whole) }
        return .double(self)
    }
}

/// A JSON array whose items all convert to `Element`.
extension Array: JSONValueConvertible where Element: JSONValueConvertible {
    /// Each item converted in turn.
    ///
    /// - Throws: ``JSONConversionError`` (`expected an array`) for a value
    ///   that is not an array; an item's error with its index put in front
    ///   of its path.
    public init(jsonValue: JSONValue) throws(JSONConversionError) {
        guard case .array(let items) = jsonValue else { throw JSONConversionError(expected: "an array", got: jsonValue) }
        var converted: [Element] = []
        converted.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            do {
                converted.append(try Element(jsonValue: item))
            } catch {
                throw error.inside(String(index))
            }
        }
        self = converted
    }

    /// The items' JSON, in order.
    public var jsonValue: JSONValue { .array(map(\.jsonValue)) }

    /// Each element's bounds.
    public func validate() throws(JSONConversionError) {
        for (index, item) in enumerated() {
            try JSONConversion.validate(item, at: [String(index)])
        }
    }

    @inlinable
    public func encodeJSON(into output: inout [UInt8]) {
        output.append(UInt8(ascii: "["))
        for (index, item) in enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            item.encodeJSON(into: &output)
        }
        output.append(UInt8(ascii: "]"))
    }
}

/// A nullable member: `null` or a `Wrapped`.
extension Optional: JSONValueConvertible where Wrapped: JSONValueConvertible {
    /// `null` is nil.
    public init(jsonValue: JSONValue) throws(JSONConversionError) {
        if case .null = jsonValue {
            self = nil
        } else {
            self = try Wrapped(jsonValue: jsonValue)
        }
    }

    /// `null` for nil, else the wrapped value's JSON.
    public var jsonValue: JSONValue { self?.jsonValue ?? .null }

    /// The wrapped value's bounds; nil passes.
    public func validate() throws(JSONConversionError) {
        try self?.validate()
    }

    @inlinable
    public func encodeJSON(into output: inout [UInt8]) {
        if let value = self {
            value.encodeJSON(into: &output)
        } else {
            output.append(contentsOf: "null".utf8)
        }
    }
}
