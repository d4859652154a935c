// The keywords that bound a value of one kind (issue 24, point 14):
// `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numbers, with
// JSON Schema 2020-12's meaning: the exclusive forms are numbers),
// `minLength`/`maxLength` (Unicode code points), `minItems`/`maxItems` and
// `const`. Each check costs at most the value's size (a string's length is
// counted once), whatever the schema.
extension Schema {
    struct Bounds: Sendable {
        var minimum: JSONValue?
        var exclusiveMinimum: JSONValue?
        var maximum: JSONValue?
        var exclusiveMaximum: JSONValue?
        var minLength: Int?
        var maxLength: Int?
        var minItems: Int?
        var maxItems: Int?
        /// `const`, as a one-value ``AllowedValues`` (numbers compare by value).
        var constant: AllowedValues?

        /// Reads the keywords from a schema object's members; nil when it has none.
        static func read(_ members: [String: JSONValue], path: String) throws(MediatorError) -> Bounds? {
            var bounds = Bounds()
            bounds.minimum = try number(members, "minimum", path: path)
            bounds.exclusiveMinimum = try number(members, "exclusiveMinimum", path: path)
            bounds.maximum = try number(members, "maximum", path: path)
            bounds.exclusiveMaximum = try number(members, "exclusiveMaximum", path: path)
            bounds.minLength = try count(members, "minLength", path: path)
            bounds.maxLength = try count(members, "maxLength", path: path)
            bounds.minItems = try count(members, "minItems", path: path)
            bounds.maxItems = try count(members, "maxItems", path: path)
            if let constant = members["const"] {
                bounds.constant = AllowedValues([constant], expectation: "expected " + Self.excerpt(render(constant)))
            }
            let isEmpty =
                bounds.minimum == nil && bounds.exclusiveMinimum == nil && bounds.maximum == nil
                && bounds.exclusiveMaximum == nil && bounds.minLength == nil && bounds.maxLength == nil
                && bounds.minItems == nil && bounds.maxItems == nil && bounds.constant == nil
            return isEmpty ? nil : bounds
        }

        /// How long a `const` may be in a refusal before it is cut, so that
        /// the message does not grow with the schema.
        static let maxRenderedConstant = 200

        private static func excerpt(_ text: String) -> String {
            guard text.count > maxRenderedConstant else { return text }
            return String(text.prefix(maxRenderedConstant)) + "…"
        }

        private static func number(_ members: [String: JSONValue], _ keyword: String, path: String)
            throws(MediatorError) -> JSONValue?
        {
            guard let value = members[keyword] else { return nil }
            switch value {
            case .int: return value
            case .double(let number) where number.isFinite: return value
            default: throw malformed(path + "." + keyword, "must be a number, got \(value.typeName)")
            }
        }

        private static func count(_ members: [String: JSONValue], _ keyword: String, path: String)
            throws(MediatorError) -> Int?
        {
            guard let value = members[keyword] else { return nil }
            let whole: Int64?
            switch value {
            case .int(let number): whole = number
            case .double(let number): whole = exactInteger(number)
            default: whole = nil
            }
            guard let whole, whole >= 0, let count = Int(exactly: whole) else {
                throw malformed(path + "." + keyword, "must be a non-negative integer, got \(render(value))")
            }
            return count
        }

        /// Why `value` is out of these bounds; nil when it is within them.
        func check(_ value: JSONValue) -> Problem.Reason? {
            if let constant, !constant.contains(value) { return .notAllowedValue(constant.expectation) }
            switch value {
            case .int, .double:
                if let minimum, let order = compareNumbers(value, minimum), order < 0 {
                    return .outOfRange("at least " + render(minimum), got: render(value))
                }
                if let exclusiveMinimum, let order = compareNumbers(value, exclusiveMinimum), order <= 0 {
                    return .outOfRange("more than " + render(exclusiveMinimum), got: render(value))
                }
                if let maximum, let order = compareNumbers(value, maximum), order > 0 {
                    return .outOfRange("at most " + render(maximum), got: render(value))
                }
                if let exclusiveMaximum, let order = compareNumbers(value, exclusiveMaximum), order >= 0 {
                    return .outOfRange("less than " + render(exclusiveMaximum), got: render(value))
                }
            case .string(let text) where minLength != nil || maxLength != nil:
                return Self.checkCount(text.unicodeScalars.count, minLength, maxLength, noun: "characters")
            case .array(let elements):
                return Self.checkCount(elements.count, minItems, maxItems, noun: "items")
            default:
                break
            }
            return nil
        }

        private static func checkCount(_ count: Int, _ least: Int?, _ most: Int?, noun: String) -> Problem.Reason? {
            if let least, count < least { return .outOfRange("at least \(least) \(noun)", got: String(count)) }
            if let most, count > most { return .outOfRange("at most \(most) \(noun)", got: String(count)) }
            return nil
        }
    }

    /// The order of two JSON numbers by value, exactly (an Int64 and a
    /// Double compare without rounding either); nil unless both are numbers.
    public static func compareNumbers(_ lhs: JSONValue, _ rhs: JSONValue) -> Int? {
        switch (lhs, rhs) {
        case (.int(let a), .int(let b)): return a < b ? -1 : a == b ? 0 : 1
        case (.double(let a), .double(let b)): return a < b ? -1 : a == b ? 0 : 1
        case (.int(let a), .double(let b)): return compare(a, b)
        case (.double(let a), .int(let b)): return compare(b, a).map { -$0 }
        default: return nil
        }
    }

    /// The order of an integer and a finite double.
    private static func compare(_ integer: Int64, _ number: Double) -> Int? {
        guard number.isFinite else { return nil }
        // 2^63: beyond it either way, no Int64 reaches the double.
        if number >= 9.223372036854775808e18 { return -1 }
        if number < -9.223372036854775808e18 { return 1 }
        let whole = number.rounded(.towardZero)
        let truncated = Int64(whole)
        if integer != truncated { return integer < truncated ? -1 : 1 }
        let fraction = number - whole
        return fraction > 0 ? -1 : fraction < 0 ? 1 : 0
    }
}
