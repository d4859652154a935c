import Testing

@testable import MediatorProtocol

/// The bounding keywords (issue 24, point 14): each was ignored before, so
/// every refused value here was let through.
@Suite struct SchemaKeywordTests {
    typealias Case = SchemaTests.Case

    static let cases: [Case] = [
        // minimum, maximum and their exclusive forms (numbers, as in 2020-12)
        Case("minimum ok", ["minimum": 0], 0, nil),
        Case("minimum", ["minimum": 0], -1, "params: expected at least 0, got -1"),
        Case("minimum double", ["minimum": 0.5], 0.25, "params: expected at least 0.5, got 0.25"),
        Case("maximum ok", ["maximum": 10], 10.0, nil),
        Case("maximum", ["maximum": 10], 10.5, "params: expected at most 10, got 10.5"),
        Case("exclusiveMinimum", ["exclusiveMinimum": 0], 0, "params: expected more than 0, got 0"),
        Case("exclusiveMinimum ok", ["exclusiveMinimum": 0], 0.001, nil),
        Case("exclusiveMaximum", ["exclusiveMaximum": 1.5], 1.5, "params: expected less than 1.5, got 1.5"),
        Case("exclusiveMaximum ok", ["exclusiveMaximum": 2], 1, nil),
        // 2^53 + 1 is above the double 2^53, though converting it to a double would round it down.
        Case("maximum exact", ["maximum": .double(9_007_199_254_740_992)], 9_007_199_254_740_993,
             "params: expected at most 9007199254740992.0, got 9007199254740993"),
        Case("maximum large double", ["maximum": .double(1e30)], .int(Int64.max), nil),
        Case("minimum ignores strings", ["minimum": 3], "a", nil),
        Case("bounds on a member", ["properties": ["age": ["type": "integer", "minimum": 0, "maximum": 150]]],
             ["age": 200], "params.age: expected at most 150, got 200"),
        // minLength, maxLength: code points
        Case("minLength ok", ["minLength": 2], "ab", nil),
        Case("minLength", ["minLength": 3], "ab", "params: expected at least 3 characters, got 2"),
        Case("maxLength", ["maxLength": 2], "abc", "params: expected at most 2 characters, got 3"),
        Case("maxLength counts code points", ["maxLength": 2], "é😀", nil),
        Case("maxLength code points over", ["maxLength": 1], "é😀", "params: expected at most 1 characters, got 2"),
        Case("maxLength ignores numbers", ["maxLength": 1], 12345, nil),
        // minItems, maxItems
        Case("minItems", ["minItems": 1], [], "params: expected at least 1 items, got 0"),
        Case("maxItems", ["maxItems": 2], [1, 2, 3], "params: expected at most 2 items, got 3"),
        Case("maxItems ok", ["maxItems": 2], [1, 2], nil),
        Case("items bounded inside", ["items": ["maxItems": 1]], [[1], [1, 2]], "params[1]: expected at most 1 items, got 2"),
        // const
        Case("const ok", ["const": "v1"], "v1", nil),
        Case("const", ["const": "v1"], "v2", "params: expected \"v1\""),
        Case("const 1 == 1.0", ["const": 1], 1.0, nil),
        Case("const object", ["const": ["a": [1]]], ["a": [2]], "params: expected {\"a\":[1]}"),
        Case("const null", ["const": nil], 0, "params: expected null"),
        // default is an annotation: kept, never checked
        Case("default not checked", ["type": "integer", "default": "x"], 3, nil),
    ]

    @Test(arguments: cases)
    func validates(_ example: Case) throws { try example.expectResult() }

    static let malformed: [(JSONValue, String)] = [
        (["minimum": "0"], "schema.minimum: must be a number, got string"),
        (["properties": ["a": ["maximum": nil]]], "schema.properties.a.maximum: must be a number, got null"),
        (["exclusiveMinimum": true], "schema.exclusiveMinimum: must be a number, got boolean"),
        (["exclusiveMaximum": [1]], "schema.exclusiveMaximum: must be a number, got array"),
        (["minLength": -1], "schema.minLength: must be a non-negative integer, got -1"),
        (["maxLength": 1.5], "schema.maxLength: must be a non-negative integer, got 1.5"),
        (["items": ["minItems": "2"]], "schema.items.minItems: must be a non-negative integer, got \"2\""),
        (["maxItems": nil], "schema.maxItems: must be a non-negative integer, got null"),
    ]

    @Test(arguments: malformed)
    func rejectsMalformed(json: JSONValue, message: String) { expectRefusal(json, message: message) }

    @Test func integralDoubleCountIsRead() throws {
        let schema = try Schema(json: ["maxLength": 2.0])
        #expect(schema.validate("abc")?.message == "params: expected at most 2 characters, got 3")
    }

    @Test func defaultIsKeptInTheJSON() throws {
        let json: JSONValue = ["type": "integer", "default": 5]
        #expect(try Schema(json: json).json == json)
    }
}

/// `anyOf` and `oneOf`: ignored before, so each refused value here was let through.
@Suite struct SchemaAlternativesTests {
    typealias Case = SchemaTests.Case

    static let idOrName: JSONValue = ["anyOf": [["type": "integer", "minimum": 1], ["type": "string", "minLength": 1]]]

    static let cases: [Case] = [
        Case("anyOf first", idOrName, 3, nil),
        Case("anyOf second", idOrName, "x", nil),
        Case("anyOf none", idOrName, 0,
             "params: matches none of the 2 schemas of \"anyOf\" (the first: params: expected at least 1, got 0)"),
        Case("anyOf none, nested path", ["properties": ["p": ["anyOf": [["properties": ["q": ["type": "string"]]], ["type": "array"]]]]],
             ["p": ["q": 1]],
             "params.p: matches none of the 2 schemas of \"anyOf\" (the first: params.p.q: expected string, got integer)"),
        Case("oneOf exactly one", ["oneOf": [["type": "string"], ["type": "integer"]]], 3, nil),
        Case("oneOf two", ["oneOf": [["type": "number"], ["type": "integer"], ["type": "integer"]]], 3,
             "params: matches more than one schema of \"oneOf\" (0 and 1)"),
        Case("oneOf none", ["oneOf": [["const": "a"], ["const": "b"]]], "c",
             "params: matches none of the 2 schemas of \"oneOf\" (the first: params: expected \"a\")"),
        Case("anyOf beside type", ["type": "object", "anyOf": [["required": ["a"]], ["required": ["b"]]]], ["b": 1], nil),
        Case("anyOf beside type refused", ["type": "object", "anyOf": [["required": ["a"]], ["required": ["b"]]]], ["c": 1],
             "params: matches none of the 2 schemas of \"anyOf\" (the first: params: missing required member \"a\")"),
        Case("anyOf through ref", ["$defs": ["Id": ["anyOf": [["type": "integer"], ["type": "null"]]]],
                                   "items": ["$ref": "#/$defs/Id"]], [1, nil, "x"],
             "params[2]: matches none of the 2 schemas of \"anyOf\" (the first: params[2]: expected integer, got string)"),
    ]

    @Test(arguments: cases)
    func validates(_ example: Case) throws { try example.expectResult() }

    static let malformed: [(JSONValue, String)] = [
        (["anyOf": ["type": "string"]], "schema.anyOf: must be an array of schemas"),
        (["oneOf": []], "schema.oneOf: must not be empty"),
        (["anyOf": [["type": "string"], "integer"]], "schema.anyOf[1]: a schema must be an object, got string"),
        (["items": ["oneOf": [["type": "strin"]]]], "schema.items.oneOf[0].type: unknown type name \"strin\"; expected one of null, boolean, integer, number, string, array, object"),
        (["anyOf": .array(Array(repeating: [:], count: Schema.maxAlternatives + 1))],
         "schema.anyOf: at most \(Schema.maxAlternatives) schemas, got \(Schema.maxAlternatives + 1)"),
    ]

    @Test(arguments: malformed)
    func rejectsMalformed(json: JSONValue, message: String) { expectRefusal(json, message: message) }

    @Test func maxAlternativesAreAccepted() throws {
        let list = JSONValue.array((0..<Schema.maxAlternatives).map { ["const": .int(Int64($0))] })
        let schema = try Schema(json: ["anyOf": list])
        #expect(schema.validate(.int(Int64(Schema.maxAlternatives - 1))) == nil)
    }

    /// k alternatives cost k checks per element: linear in the value.
    @Test func anyOfCostsItsAlternativesPerElement() throws {
        let count = Schema.maxAlternatives
        var alternatives: [JSONValue] = (0..<(count - 1)).map { _ in ["type": "string"] }
        alternatives.append(["type": "integer"])
        let schema = try Schema(json: ["type": "array", "items": ["anyOf": .array(alternatives)]])
        let elements = 1_000
        let (problem, steps) = schema.check(.array((0..<elements).map { .int(Int64($0)) }))
        #expect(problem == nil)
        // The array; per element: the anyOf schema, then each alternative until the last matches.
        #expect(steps == 1 + elements * (1 + count))
    }

    /// Alternatives nested through a recursive `$ref` would multiply at
    /// each level of the value (16^depth); the budget stops that.
    @Test func nestedAlternativesStayWithinTheBudget() throws {
        let branch: JSONValue = ["type": "object", "properties": ["a": ["$ref": "#/$defs/A"]]]
        let schema = try Schema(json: [
            "$defs": ["A": ["anyOf": .array(Array(repeating: branch, count: Schema.maxAlternatives))]],
            "$ref": "#/$defs/A",
        ])
        // 40 levels whose leaf matches no branch: every branch of every level is tried.
        var value: JSONValue = 5
        for _ in 0..<40 { value = ["a": value] }
        let (problem, steps) = schema.check(value)
        let size = 41
        #expect(steps <= Schema.maxCheckStepsPerElement * size + Schema.maxAlternatives * 2 * size)
        let message = problem?.message(root: "params")
        #expect(message?.contains("too costly to check against this schema's \"anyOf\"/\"oneOf\"") == true)
    }

    @Test func referenceCycleThroughAlternativesStops() throws {
        let schema = try Schema(json: ["$defs": ["A": ["anyOf": [["$ref": "#/$defs/A"]]]], "$ref": "#/$defs/A"])
        let error = schema.validate(1)
        #expect(error?.code == .invalidParams)
    }
}

extension SchemaTests.Case {
    /// Checks the value: refused with `message`, or accepted when it is nil.
    func expectResult() throws {
        let error = try Schema(json: schema).validate(value)
        if let message {
            #expect(error?.code == .invalidParams)
            #expect(error?.message == message)
        } else {
            #expect(error == nil)
        }
    }
}

/// Reading `json` is refused with `bad_request` and exactly `message`.
func expectRefusal(_ json: JSONValue, message: String) {
    #expect {
        try Schema(json: json)
    } throws: { error in
        guard let error = error as? MediatorError else { return false }
        return error.code == .badRequest && error.message == message
    }
}
