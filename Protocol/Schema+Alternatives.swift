// `anyOf` and `oneOf` (issue 24, point 14). A value checked against k
// alternatives costs k times its size: linear in the value for a given
// schema, and kept so whatever the schema by two bounds: at most
// ``maxAlternatives`` schemas per keyword (refused at `register` beyond),
// and a budget of ``maxCheckStepsPerElement`` steps per element of the
// value, since alternatives nested through a recursive `$ref` would
// otherwise multiply at each level of the value.
extension Schema {
    /// How many schemas an `anyOf` or a `oneOf` may list.
    public static let maxAlternatives = 16
    /// The work a check may do per element of the value (each array element,
    /// object member and scalar counts one) when the schema has alternatives;
    /// a value that would take more is refused as too costly to check.
    public static let maxCheckStepsPerElement = 1024

    struct Alternatives: Sendable {
        /// Empty when the keyword is absent.
        let anyOf: [Node]
        let oneOf: [Node]

        /// Reads `anyOf` and `oneOf`; nil when the schema has neither.
        static func read(
            _ members: [String: JSONValue], path: String, depth: Int, definitionIndex: [String: Int]
        ) throws(MediatorError) -> Alternatives? {
            let anyOf = try readList(members, "anyOf", path: path, depth: depth, definitionIndex: definitionIndex)
            let oneOf = try readList(members, "oneOf", path: path, depth: depth, definitionIndex: definitionIndex)
            return anyOf.isEmpty && oneOf.isEmpty ? nil : Alternatives(anyOf: anyOf, oneOf: oneOf)
        }

        private static func readList(
            _ members: [String: JSONValue], _ keyword: String, path: String, depth: Int,
            definitionIndex: [String: Int]
        ) throws(MediatorError) -> [Node] {
            guard let value = members[keyword] else { return [] }
            let keywordPath = path + "." + keyword
            guard let list = value.arrayValue else { throw malformed(keywordPath, "must be an array of schemas") }
            guard !list.isEmpty else { throw malformed(keywordPath, "must not be empty") }
            guard list.count <= maxAlternatives else {
                throw malformed(keywordPath, "at most \(maxAlternatives) schemas, got \(list.count)")
            }
            var nodes: [Node] = []
            for (index, schema) in list.enumerated() {
                nodes.append(
                    try Node.read(
                        schema, path: keywordPath + "[\(index)]", depth: depth + 1, definitionIndex: definitionIndex))
            }
            return nodes
        }
    }

    /// The number of elements of `value`, itself included: what the step
    /// budget of a schema with alternatives is proportional to.
    static func elementCount(_ value: JSONValue) -> Int {
        switch value {
        case .array(let elements): return elements.reduce(1) { $0 + elementCount($1) }
        case .object(let members): return members.values.reduce(1) { $0 + elementCount($1) }
        default: return 1
        }
    }
}

extension Schema.Checker {
    /// Checks `value` against `anyOf` (one must match) and `oneOf` (exactly
    /// one must: counting stops at the second match).
    mutating func checkAlternatives(_ value: JSONValue, _ alternatives: Schema.Alternatives, depth: Int)
        -> Schema.Problem?
    {
        // Alternatives check the same value again: count them as depth so
        // that a `$ref` cycle through them stops.
        guard depth < Schema.maxValueDepth else { return Schema.Problem(.tooDeep) }
        if !alternatives.anyOf.isEmpty {
            var first: Schema.Problem?
            var matched = false
            for schema in alternatives.anyOf {
                guard let problem = check(value, against: schema, depth: depth + 1) else {
                    matched = true
                    break
                }
                if case .tooCostly = problem.reason { return problem }
                if first == nil { first = problem }
            }
            if !matched, let first {
                return Schema.Problem(.noAlternative(keyword: "anyOf", count: alternatives.anyOf.count, first: first))
            }
        }
        if !alternatives.oneOf.isEmpty {
            var first: Schema.Problem?
            var matches: [Int] = []
            for (index, schema) in alternatives.oneOf.enumerated() {
                if let problem = check(value, against: schema, depth: depth + 1) {
                    if case .tooCostly = problem.reason { return problem }
                    if first == nil { first = problem }
                    continue
                }
                matches.append(index)
                if matches.count == 2 { return Schema.Problem(.severalAlternatives(matches[0], matches[1])) }
            }
            if matches.isEmpty, let first {
                return Schema.Problem(.noAlternative(keyword: "oneOf", count: alternatives.oneOf.count, first: first))
            }
        }
        return nil
    }
}
