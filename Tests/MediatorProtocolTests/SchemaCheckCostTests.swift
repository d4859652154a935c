import Testing

@testable import MediatorProtocol

/// Checking costs about the size of the value, whatever the size of the
/// schema (issue 23: a 10,000-value `enum` or an object of 3,000 properties
/// held up the broker's loop for seconds). Measured as work done
/// (``Schema/Checker/steps``), not time.
@Suite struct SchemaCheckCostTests {
    static let elementCount = 1_000

    static func names(_ count: Int) -> [JSONValue] { (0..<count).map { .string("v\($0)") } }

    @Test func wideEnumCostsOneLookupPerElement() throws {
        let schema = try Schema(json: ["type": "array", "items": ["enum": .array(Self.names(10_000))]])
        let value = JSONValue.array(Array(Self.names(10_000).suffix(Self.elementCount)))
        let (problem, steps) = schema.check(value)
        #expect(problem == nil)
        // The array, then each element once.
        #expect(steps == 1 + Self.elementCount)

        let miss = JSONValue.array(Array(Self.names(10_000).suffix(Self.elementCount)) + ["nope"])
        let error = schema.validate(miss)
        #expect(error?.message.hasPrefix("params[\(Self.elementCount)]: expected one of [\"v0\",\"v1\",") == true)
        #expect(error?.message.hasSuffix(", … and 9990 more]") == true)
    }

    @Test(arguments: [false, true])
    func wideObjectCostsItsMembersNotItsProperties(additionalForbidden: Bool) throws {
        var item: [String: JSONValue] = ["properties": .object(Dictionary(uniqueKeysWithValues: (0..<3_000).map {
            ("p\($0)", ["type": "integer"])
        }))]
        if additionalForbidden { item["additionalProperties"] = false }
        let schema = try Schema(json: ["type": "array", "items": .object(item)])
        let value = JSONValue.array((0..<Self.elementCount).map { .object(["p\($0)": .int(Int64($0))]) })
        let (problem, steps) = schema.check(value)
        #expect(problem == nil)
        // The array; per element: the object, its one member looked up, checked.
        #expect(steps == 1 + 3 * Self.elementCount)
    }

    @Test func wideValueAgainstFewPropertiesCostsTheProperties() throws {
        let schema = try Schema(json: ["properties": ["a": ["type": "integer"], "b": ["type": "string"]]])
        var members: [String: JSONValue] = ["a": 1, "b": "x"]
        for index in 0..<Self.elementCount { members["extra\(index)"] = .int(Int64(index)) }
        let (problem, steps) = schema.check(.object(members))
        #expect(problem == nil)
        // The object, two properties looked up, both checked.
        #expect(steps == 5)
    }
}
