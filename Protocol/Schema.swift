/// A JSON Schema of the subset the contract allows in an ActionSpec (section 6):
/// `type`, `properties`, `required`, `items`, `enum`, `additionalProperties`,
/// `description`, the bounds `minimum`, `maximum`, `exclusiveMinimum`,
/// `exclusiveMaximum`, `minLength`, `maxLength`, `minItems`, `maxItems`,
/// `const` (`Bounds`), `anyOf` and `oneOf` (`Alternatives`, bounded so
/// that checking stays linear) and the annotation `default` (kept, never checked),
/// with JSON Schema 2020-12's meaning; and our extensions (issue
/// 11): `title`, `$defs` (named schemas) and `$ref` (only `#/$defs/NAME`,
/// resolved against the `$defs` of the root schema), and `"format": "fd"`,
/// a file descriptor sent with the message (contract section 8): the value
/// `{"$fd": I}` with 0 ≤ I < the message's `fds`.
///
/// The daemon checks every call to an action that declares `params` (and
/// every result of one that declares `result`), so the schema is read once,
/// at `register`, into a form that is quick to check; a malformed schema is
/// refused there rather than failing later on each call. The original JSON is
/// kept for `describe` and for comparing the specs of a pool, and equality is
/// that of the JSON.
///
/// Unknown keywords are ignored (and kept in ``json``), except beside `$ref`,
/// which allows only `description`. As in JSON Schema, a number with an
/// integral value (`1.0`) is an `integer`, `number` accepts integers, and
/// `properties`/`items` only apply to objects/arrays.
///
/// A recursive type through an object or array (`Node.children: [Node]`) is
/// allowed: checking follows the value, which is finite. A cycle of `$ref`s
/// with nothing in between (`A` is `$ref B`, `B` is `$ref A`) would check
/// nothing and is refused.
public struct Schema: Sendable, Hashable {
    /// This schema's keywords, read.
    private let node: Node
    /// The root's `$defs`, against which every `$ref` in the tree resolves;
    /// nil when the root has none (and so the tree has no `$ref`). Nodes
    /// never point back at it, so recursive types make no reference cycle.
    private let scope: Scope?

    /// Reads a schema; throws `bad_request` naming the faulty keyword by path
    /// (for example `schema.properties.title.type: unknown type name "strin"`).
    public init(json: JSONValue) throws(MediatorError) {
        try self.init(json: json, path: "schema")
    }

    /// Reads a schema whose errors name it `path` (ActionSpec says `params`, `result`).
    init(json: JSONValue, path: String) throws(MediatorError) {
        var definitionIndex: [String: Int] = [:]
        if let definitions = json.objectValue?["$defs"]?.objectValue {
            for (index, name) in definitions.keys.sorted().enumerated() { definitionIndex[name] = index }
        }
        let root = try Node.read(json, path: path, depth: 0, definitionIndex: definitionIndex)
        self.node = root
        self.scope = definitionIndex.isEmpty ? nil : try Scope(root: root, path: path)
    }

    private init(node: Node, scope: Scope?) {
        self.node = node
        self.scope = scope
    }

    public static func == (lhs: Schema, rhs: Schema) -> Bool { lhs.json == rhs.json }
    public func hash(into hasher: inout Hasher) { hasher.combine(json) }

    /// The schema exactly as it was given.
    public var json: JSONValue { node.json }
    /// The `description` keyword.
    public var description: String? { node.description }
    /// The `title` keyword (it names the generated type of an object schema).
    public var title: String? { node.title }
    /// The allowed type names, in the order given; nil when `type` is absent.
    public var types: [String]? { node.typeNames }
    /// The `properties` keyword; empty when absent.
    public var properties: [String: Schema] { node.properties.mapValues { Schema(node: $0, scope: scope) } }
    /// The `required` keyword, without repeats; empty when absent.
    public var required: [String] { node.required }
    /// The `items` keyword.
    public var items: Schema? { node.items.map { Schema(node: $0, scope: scope) } }
    /// The `enum` keyword.
    public var enumValues: [JSONValue]? { node.allowed?.values }
    /// The `additionalProperties` keyword; ``AdditionalProperties/allowed`` when absent.
    public var additionalProperties: AdditionalProperties {
        switch node.additional {
        case .allowed: .allowed
        case .forbidden: .forbidden
        case .schema(let extra): .schema(Schema(node: extra, scope: scope))
        }
    }
    /// The `$defs` keyword of this schema, as given, keyed by name; empty when
    /// absent. Only the root's definitions can be the target of a `$ref`.
    public var definitions: [String: Schema] {
        var byName: [String: Schema] = [:]
        for (name, definition) in node.definitions { byName[name] = Schema(node: definition, scope: scope) }
        return byName
    }
    /// `"format": "fd"`: the value is a descriptor, `{"$fd": I}`.
    public var isDescriptor: Bool { node.isDescriptor }
    /// The `format` value that makes a schema a descriptor's.
    public static let descriptorFormat = "fd"
    /// The `$ref` keyword as written (`#/$defs/Note`); nil when absent.
    public var reference: String? { node.reference?.text }
    /// The name a `$ref` points at (`Note` for `#/$defs/Note`); nil without `$ref`.
    public var referenceName: String? { node.reference?.name }
    /// The root definition a `$ref` names (itself possibly a `$ref`); nil without `$ref`.
    public var referenced: Schema? {
        guard let reference = node.reference, let scope else { return nil }
        return Schema(node: scope.definitions[reference.index], scope: scope)
    }

    /// What `additionalProperties` allows for members not in `properties`.
    public enum AdditionalProperties: Sendable, Hashable {
        /// Absent or `true`.
        case allowed
        /// `false`.
        case forbidden
        /// A schema each extra member must match.
        case schema(Schema)
    }

    /// Checks `value`; nil when it matches, else an `invalid_params` error
    /// whose message names the first offending member by path, starting at
    /// `path` (`params.tags[2]: expected one of ["a","b"]`). `fds` is the
    /// `fds` of the message that carries the value (0 without): a
    /// descriptor's `{"$fd": I}` must have I below it.
    public func validate(_ value: JSONValue, path: String = "params", fds: Int = 0) -> MediatorError? {
        guard let problem = check(value, fds: fds).problem else { return nil }
        return MediatorError(.invalidParams, problem.message(root: path))
    }

    /// Checks `value`, also saying how much work that took (``Checker/steps``).
    func check(_ value: JSONValue, fds: Int = 0) -> (problem: Problem?, steps: Int) {
        let hasAlternatives = node.containsAlternatives || scope?.containsAlternatives == true
        let budget = hasAlternatives ? Self.maxCheckStepsPerElement * Self.elementCount(value) : nil
        var checker = Checker(scope: scope, budget: budget, fds: fds)
        let problem = checker.check(value, against: node, depth: 0)
        return (problem, checker.steps)
    }

    // MARK: - Reading

    /// Deeper schemas are refused so that reading and checking cannot exhaust the stack.
    static let maxDepth = 64
    /// How deep checking follows a value through a recursive type: more than
    /// any value the JSON parser gives (128), so only a value built in code
    /// can reach it, and it then fails instead of exhausting the stack.
    static let maxValueDepth = 256
    /// The only form of `$ref`: a name in the root's `$defs`.
    static let referencePrefix = "#/$defs/"

    static func malformed(_ path: String, _ problem: String) -> MediatorError {
        MediatorError(.badRequest, "\(path): \(problem)")
    }

    /// The root's definitions, in the order of their sorted names, and what
    /// each one's chain of `$ref`s ends at (a schema that is not a `$ref`).
    final class Scope: Sendable {
        let definitions: [Node]
        let resolved: [Node]
        /// Whether a definition has `anyOf`/`oneOf`, so that a sub-schema
        /// reaching it by `$ref` is checked on a budget too.
        let containsAlternatives: Bool

        /// Follows each definition's `$ref`s, once each (a long chain costs
        /// its length, not its square), and refuses a cycle.
        init(root: Node, path: String) throws(MediatorError) {
            let names = root.definitions.map(\.name)
            let definitions = root.definitions.map(\.node)
            let unvisited = -1
            let onChain = -2
            var end = [Int](repeating: unvisited, count: definitions.count)
            for start in definitions.indices where end[start] == unvisited {
                var chain: [Int] = []
                var current = start
                var last: Int
                while true {
                    if end[current] >= 0 {
                        last = end[current]
                        break
                    }
                    if end[current] == onChain {
                        let loop = chain.drop(while: { $0 != current }).map { names[$0] } + [names[current]]
                        throw malformed(
                            path + ".$defs" + memberPath(names[current]),
                            "a cycle of \"$ref\" with no object or array in between: " + loop.joined(separator: " -> "))
                    }
                    end[current] = onChain
                    chain.append(current)
                    guard let next = definitions[current].reference?.index else {
                        last = current
                        break
                    }
                    current = next
                }
                for index in chain { end[index] = last }
            }
            self.definitions = definitions
            self.resolved = end.map { definitions[$0] }
            self.containsAlternatives = definitions.contains { $0.containsAlternatives }
        }
    }

    /// What `additionalProperties` allows for members not in `properties`.
    enum AdditionalRule: Sendable {
        case allowed
        case forbidden
        case schema(Node)
    }

    /// JSON equality where numbers compare by value, so that `1` matches `1.0`.
    public static func sameValue(_ lhs: JSONValue, _ rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)):
            return exactInteger(b) == a
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { sameValue($0, $1) }
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for (key, value) in a {
                guard let other = b[key], sameValue(value, other) else { return false }
            }
            return true
        default:
            return lhs == rhs
        }
    }

    /// `number` as an Int64 when it is one exactly (converting a large
    /// Int64 to Double could round, so numbers compare this way).
    static func exactInteger(_ number: Double) -> Int64? {
        guard number.isFinite, number.rounded(.towardZero) == number, number >= -9.223372036854775808e18,
            number < 9.223372036854775808e18
        else { return nil }
        return Int64(number)
    }
}
