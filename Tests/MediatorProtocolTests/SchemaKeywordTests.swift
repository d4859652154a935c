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
    func validates(_ example: Case) throws {
        let schema = try Schema(json: example.schema)
        let error = schema.validate(example.value)
        if let message = example.message {
            #expect(error?.code == .invalidParams)
            #expect(error?.message == message)
        } else {
            #expect(error == nil)
        }
    }

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
    func rejectsMalformed(json: JSONValue, message: String) {
        #expect {
            try Schema(json: json)
        } throws: { error in
            guard let error = error as? MediatorError else { return false }
            return error.code == .badRequest && error.message == message
        }
    }

    @Test func integralDoubleCountIsRead() throws {
        let schema = try Schema(json: ["maxLength": 2.0])
        #expect(schema.validate("abc")?.message == "params: expected at most 2 characters, got 3")
    }

    @Test func defaultIsKeptInTheJSON() throws {
        let json: JSONValue = ["type": "integer", "default": 5]
        #expect(try Schema(json: json).json == json)
    }
}
