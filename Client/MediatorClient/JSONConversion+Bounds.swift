import MediatorProtocol

/// The checks generated types make of the bounds their interface's schema
/// puts on a member (`minimum`, `maxLength`, `minItems`, `const`, ...), with
/// the daemon's meaning (`Schema`): lengths in Unicode code points,
/// numbers compared exactly, `const` with `1` equal to `1.0`. Each costs at
/// most the size of the value it checks. `path` is only built for the error.
extension JSONConversion {
    /// `minimum`, `exclusiveMinimum`, `maximum`, `exclusiveMaximum` of a number.
    public static func checkNumber(
        _ value: JSONValue, minimum: JSONValue? = nil, exclusiveMinimum: JSONValue? = nil,
        maximum: JSONValue? = nil, exclusiveMaximum: JSONValue? = nil, at path: @autoclosure () -> [String]
    ) throws(JSONConversionError) {
        func refuse(_ expected: String, _ bound: JSONValue) -> JSONConversionError {
            JSONConversionError(path: path(), expected: expected + " " + bound.jsonText, found: value.jsonText)
        }
        if let minimum, let order = Schema.compareNumbers(value, minimum), order < 0 { throw refuse("at least", minimum) }
        if let exclusiveMinimum, let order = Schema.compareNumbers(value, exclusiveMinimum), order <= 0 {
            throw refuse("more than", exclusiveMinimum)
        }
        if let maximum, let order = Schema.compareNumbers(value, maximum), order > 0 { throw refuse("at most", maximum) }
        if let exclusiveMaximum, let order = Schema.compareNumbers(value, exclusiveMaximum), order >= 0 {
            throw refuse("less than", exclusiveMaximum)
        }
    }

    /// `minLength`, `maxLength`: the string's length in Unicode code points, as JSON Schema counts.
    public static func checkLength(
        _ text: String, minLength: Int? = nil, maxLength: Int? = nil, at path: @autoclosure () -> [String]
    ) throws(JSONConversionError) {
        try checkCount(text.unicodeScalars.count, minLength, maxLength, noun: "characters", at: path())
    }

    /// `minItems`, `maxItems`.
    public static func checkItems(
        _ count: Int, minItems: Int? = nil, maxItems: Int? = nil, at path: @autoclosure () -> [String]
    ) throws(JSONConversionError) {
        try checkCount(count, minItems, maxItems, noun: "items", at: path())
    }

    /// `const`: the value, as JSON, equals `constant` (numbers by value).
    public static func checkConst(
        _ value: some JSONValueConvertible, _ constant: JSONValue, at path: @autoclosure () -> [String]
    ) throws(JSONConversionError) {
        let json = value.jsonValue
        guard Schema.sameValue(json, constant) else {
            throw JSONConversionError(path: path(), expected: constant.jsonText, found: JSONConversionError.sample(json))
        }
    }

    private static func checkCount(
        _ count: Int, _ least: Int?, _ most: Int?, noun: String, at path: @autoclosure () -> [String]
    ) throws(JSONConversionError) {
        if let least, count < least {
            throw JSONConversionError(path: path(), expected: "at least \(least) \(noun)", found: String(count))
        }
        if let most, count > most {
            throw JSONConversionError(path: path(), expected: "at most \(most) \(noun)", found: String(count))
        }
    }

    /// `value.validate()`, its error placed under `path` (a member, an index).
    public static func validate(_ value: some JSONValueConvertible, at path: @autoclosure () -> [String])
        throws(JSONConversionError)
    {
        do {
            try value.validate()
        } catch {
            var placed = error
            placed.path = path() + placed.path
            throw placed
        }
    }

    /// Params checked against their schema's bounds before they are sent:
    /// what the typed calls do; `invalid_params` (nothing is sent) when one
    /// is out of them.
    @inlinable
    public static func validatedParams<Params: JSONValueConvertible>(_ params: Params) throws(MediatorError) -> Params {
        do {
            try params.validate()
        } catch {
            throw MediatorError(.invalidParams, "params out of their schema's bounds: \(error)")
        }
        return params
    }
}
