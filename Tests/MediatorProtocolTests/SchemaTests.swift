import Testing

@testable import MediatorProtocol

@Suite struct SchemaTests {
    /// A schema, a value, and the `invalid_params` message expected (nil: the value matches).
    struct Case: Sendable, CustomTestStringConvertible {
        let label: String
        let schema: JSONValue
        let value: JSONValue
        let message: String?
        var testDescription: String { label }

        init(_ label: String, _ schema: JSONValue, _ value: JSONValue, _ message: String?) {
            self.label = label
            self.schema = schema
            self.value = value
            self.message = message
        }
    }

    static let detail: JSONValue = [
        "type": "object",
        "description": "Show a detail view",
        "properties": [
            "title": ["type": "string"],
            "count": ["type": "integer"],
            "ratio": ["type": "number"],
            "tags": ["type": "array", "items": ["enum": ["a", "b"]]],
            "owner": [
                "type": "object",
                "properties": ["name": ["type": "string"], "age": ["type": ["integer", "null"]]],
                "required": ["name"],
                "additionalProperties": false,
            ],
        ],
        "required": ["title"],
    ]

    static let cases: [Case] = [
        // type, one name
        Case("string ok", ["type": "string"], "x", nil),
        Case("string vs int", ["type": "string"], 3, "params: expected string, got integer"),
        Case("string vs null", ["type": "string"], nil, "params: expected string, got null"),
        Case("boolean ok", ["type": "boolean"], true, nil),
        Case("boolean vs string", ["type": "boolean"], "true", "params: expected boolean, got string"),
        Case("null ok", ["type": "null"], nil, nil),
        Case("null vs false", ["type": "null"], false, "params: expected null, got boolean"),
        Case("integer ok", ["type": "integer"], 7, nil),
        Case("integer takes 1.0", ["type": "integer"], 1.0, nil),
        Case("integer takes -3.0", ["type": "integer"], -3.0, nil),
        Case("integer takes 1e20", ["type": "integer"], .double(1e20), nil),
        Case("integer vs 1.5", ["type": "integer"], 1.5, "params: expected integer, got number"),
        Case("integer vs string", ["type": "integer"], "1", "params: expected integer, got string"),
        Case("number takes int", ["type": "number"], 2, nil),
        Case("number takes double", ["type": "number"], 2.5, nil),
        Case("number vs bool", ["type": "number"], false, "params: expected number, got boolean"),
        Case("array ok", ["type": "array"], [1, "x"], nil),
        Case("array vs object", ["type": "array"], [:], "params: expected array, got object"),
        Case("object ok", ["type": "object"], ["a": 1], nil),
        Case("object vs array", ["type": "object"], [], "params: expected object, got array"),
        // type, several names
        Case("string or null: null", ["type": ["string", "null"]], nil, nil),
        Case("string or null: string", ["type": ["string", "null"]], "s", nil),
        Case("string or null: int", ["type": ["string", "null"]], 1, "params: expected string or null, got integer"),
        Case("integer or boolean: 2.5", ["type": ["integer", "boolean"]], 2.5,
             "params: expected integer or boolean, got number"),
        // no type: anything
        Case("empty schema takes anything", [:], ["x": [1, nil]], nil),
        Case("unknown keywords ignored", ["pattern": "^a", "format": "date"], "b", nil),
        // enum
        Case("enum ok", ["enum": ["a", "b"]], "b", nil),
        Case("enum miss", ["enum": ["a", "b"]], "c", "params: expected one of [\"a\",\"b\"]"),
        Case("enum 1 == 1.0", ["enum": [1, 2]], 1.0, nil),
        Case("enum 1.0 == 1", ["enum": [1.0, 2.5]], 1, nil),
        Case("enum 2.5", ["enum": [1.0, 2.5]], 2.5, nil),
        Case("enum number miss", ["enum": [1, 2]], 1.5, "params: expected one of [1,2]"),
        Case("enum int vs string", ["enum": [1]], "1", "params: expected one of [1]"),
        Case("enum null", ["enum": [nil, "x"]], nil, nil),
        Case("enum nested numbers", ["enum": [["a": [1, 2]]]], ["a": [1.0, 2.0]], nil),
        Case("enum nested miss", ["enum": [["a": [1, 2]]]], ["a": [1, 3]], "params: expected one of [{\"a\":[1,2]}]"),
        Case("enum with type", ["type": "string", "enum": ["a", 1]], 1, "params: expected string, got integer"),
        Case("enum renders escapes", ["enum": ["q\"\\\n"]], "x", "params: expected one of [\"q\\\"\\\\\\n\"]"),
        Case("enum -0.0 == 0", ["enum": [0]], -0.0, nil),
        Case("enum 1e20 == 1e20", ["enum": [.double(1e20)]], .double(1e20), nil),
        // 2^53 + 1 has no exact Double: it must not match the nearest one.
        Case("enum large int vs double", ["enum": [.double(9_007_199_254_740_992)]], 9_007_199_254_740_993,
             "params: expected one of [9007199254740992.0]"),
        Case("enum object members in any order", ["enum": [["a": 1, "b": [true, nil]]]], ["b": [true, nil], "a": 1.0], nil),
        Case("enum object value differs", ["enum": [["a": 1, "b": 2]]], ["a": 2, "b": 1],
             "params: expected one of [{\"a\":1,\"b\":2}]"),
        Case("enum array order matters", ["enum": [[1, 2]]], [2, 1], "params: expected one of [[1,2]]"),
        Case("enum long list is cut", ["enum": .array((1...12).map { .int($0) })], 13,
             "params: expected one of [1,2,3,4,5,6,7,8,9,10, … and 2 more]"),
        // required and properties
        Case("detail ok", detail, ["title": "Hi", "count": 2, "tags": ["a", "b", "a"]], nil),
        Case("missing title", detail, ["count": 2], "params: missing required member \"title\""),
        Case("title type", detail, ["title": 5], "params.title: expected string, got integer"),
        Case("count takes 3.0", detail, ["title": "t", "count": 3.0], nil),
        Case("count 3.5", detail, ["title": "t", "count": 3.5], "params.count: expected integer, got number"),
        Case("tags[2]", detail, ["title": "t", "tags": ["a", "b", "c"]], "params.tags[2]: expected one of [\"a\",\"b\"]"),
        Case("tags not array", detail, ["title": "t", "tags": "a"], "params.tags: expected array, got string"),
        Case("extra allowed by default", detail, ["title": "t", "extra": 1], nil),
        Case("nested required", detail, ["title": "t", "owner": [:]], "params.owner: missing required member \"name\""),
        Case("nested type", detail, ["title": "t", "owner": ["name": 1]], "params.owner.name: expected string, got integer"),
        Case("nested null ok", detail, ["title": "t", "owner": ["name": "n", "age": nil]], nil),
        Case("nested extra", detail, ["title": "t", "owner": ["name": "n", "x": 1]], "params.owner.x: member not allowed"),
        Case("not an object", detail, [], "params: expected object, got array"),
        Case("properties ignore non-objects", ["properties": ["a": ["type": "string"]]], 5, nil),
        Case("items ignore non-arrays", ["items": ["type": "string"]], "x", nil),
        Case("odd member names", ["properties": ["a b": ["type": "string"], "9": ["type": "string"]]],
             ["a b": 1], "params[\"a b\"]: expected string, got integer"),
        Case("digit member name", ["properties": ["9": ["type": "string"]]], ["9": 1],
             "params[\"9\"]: expected string, got integer"),
        Case("required without properties", ["required": ["a", "b"]], ["a": 1], "params: missing required member \"b\""),
        // additionalProperties
        Case("additional false ok", ["properties": ["a": [:]], "additionalProperties": false], ["a": 1], nil),
        Case("additional false", ["properties": ["a": [:]], "additionalProperties": false], ["a": 1, "zz": 2, "b": 3],
             "params.b: member not allowed"),
        Case("additional true", ["properties": ["a": [:]], "additionalProperties": true], ["b": 3], nil),
        Case("first failing property by name", detail, ["title": 1, "count": "x", "ratio": "y", "zz": 1],
             "params.count: expected integer, got string"),
        Case("declared before extra", ["properties": ["z": ["type": "string"]], "additionalProperties": false],
             ["a": 1, "z": 2], "params.z: expected string, got integer"),
        Case("fewer declared than members", ["properties": ["b": ["type": "string"]]], ["a": 1, "b": 2, "c": 3],
             "params.b: expected string, got integer"),
        Case("additional schema ok", ["properties": ["a": [:]], "additionalProperties": ["type": "integer"]],
             ["a": "x", "b": 3, "c": 4.0], nil),
        Case("additional schema", ["properties": ["a": [:]], "additionalProperties": ["type": "integer"]],
             ["a": "x", "b": "y"], "params.b: expected integer, got string"),
        Case("additional schema does not apply to declared", ["properties": ["a": ["type": "string"]],
             "additionalProperties": ["type": "integer"]], ["a": "x"], nil),
        // items, nested arrays
        Case("matrix ok", ["items": ["items": ["type": "number"]]], [[1, 2.5], []], nil),
        Case("matrix", ["items": ["items": ["type": "number"]]], [[1], [2, "x"]], "params[1][1]: expected number, got string"),
        Case("array of objects", ["items": ["properties": ["id": ["type": "integer"]], "required": ["id"]]],
             [["id": 1], ["id": "2"]], "params[1].id: expected integer, got string"),
    ]

    // MARK: - $defs, $ref, title (issue 11)

    static let notes: JSONValue = [
        "type": "object",
        "required": ["notes"],
        "properties": ["notes": ["type": "array", "items": ["$ref": "#/$defs/Note"]]],
        "$defs": [
            "Note": [
                "type": "object", "title": "Note", "required": ["id", "text"],
                "properties": [
                    "id": ["type": "integer"], "text": ["type": "string"], "due": ["type": ["string", "null"]],
                ],
            ]
        ],
    ]

    /// A recursive type through an array: `Node.children: [Node]`.
    static let tree: JSONValue = [
        "$defs": [
            "Node": [
                "type": "object", "required": ["name"],
                "properties": ["name": ["type": "string"], "children": ["type": "array", "items": ["$ref": "#/$defs/Node"]]],
            ]
        ],
        "type": "object",
        "properties": ["root": ["$ref": "#/$defs/Node", "description": "the top"]],
    ]

    /// `A` and `B` refer to each other through object properties.
    static let mutual: JSONValue = [
        "$defs": [
            "A": ["type": "object", "properties": ["b": ["$ref": "#/$defs/B"]]],
            "B": ["type": "object", "properties": ["a": ["$ref": "#/$defs/A"]]],
        ],
        "properties": ["a": ["$ref": "#/$defs/A"]],
    ]

    static let referenceCases: [Case] = [
        Case("notes ok", notes, ["notes": [["id": 1, "text": "a"], ["id": 2, "text": "b", "due": nil], ["id": 3.0, "text": "c", "due": "d"]]], nil),
        Case("notes empty", notes, ["notes": []], nil),
        Case("notes[2].id", notes, ["notes": [["id": 1, "text": "a"], ["id": 2, "text": "b"], ["id": "3", "text": "c"]]],
             "params.notes[2].id: expected integer, got string"),
        Case("notes[0] missing text", notes, ["notes": [["id": 1]]], "params.notes[0]: missing required member \"text\""),
        Case("nullable is not optional-typed", notes, ["notes": [["id": 1, "text": "a", "due": 5]]],
             "params.notes[0].due: expected string or null, got integer"),
        Case("notes item not object", notes, ["notes": [7]], "params.notes[0]: expected object, got integer"),
        Case("title alone", ["type": "object", "title": "Point"], [:], nil),
        Case("root is a reference to its own definition", ["$ref": "#/$defs/Note", "$defs": ["Note": ["type": "object", "required": ["id"]]]],
             ["id": 1], nil),
        Case("root reference checked", ["$ref": "#/$defs/Note", "$defs": ["Note": ["type": "object", "required": ["id"]]]],
             ["x": 1], "params: missing required member \"id\""),
        Case("tree ok", tree, ["root": ["name": "a", "children": [["name": "b", "children": [["name": "c", "children": []]]]]]], nil),
        Case("tree deep error", tree, ["root": ["name": "a", "children": [["name": "b", "children": [["name": 3]]]]]],
             "params.root.children[0].children[0].name: expected string, got integer"),
        Case("tree missing name", tree, ["root": ["children": []]], "params.root: missing required member \"name\""),
        Case("mutual ok", mutual, ["a": ["b": ["a": ["b": [:]]]]], nil),
        Case("mutual", mutual, ["a": ["b": ["a": ["b": 5]]]], "params.a.b.a.b: expected object, got integer"),
        Case("chain of refs", ["$defs": ["A": ["$ref": "#/$defs/B", "description": "alias"], "B": ["type": "integer"]],
                               "properties": ["x": ["$ref": "#/$defs/A"]]], ["x": "s"], "params.x: expected integer, got string"),
        Case("ref in additionalProperties", ["$defs": ["N": ["type": "number"]], "additionalProperties": ["$ref": "#/$defs/N"]],
             ["a": 1, "b": "x"], "params.b: expected number, got string"),
        Case("ref in a definition's additionalProperties", ["$defs": ["Map": ["type": "object", "additionalProperties": ["$ref": "#/$defs/Map"]]],
             "items": ["$ref": "#/$defs/Map"]], [["a": ["b": [:]]], ["c": 1]], "params[1].c: expected object, got integer"),
        Case("refs resolve against the root's $defs", [
            "$defs": ["S": ["type": "string"]],
            "properties": ["p": ["$defs": ["S": ["type": "integer"]], "properties": ["q": ["$ref": "#/$defs/S"]]]],
        ], ["p": ["q": 1]], "params.p.q: expected string, got integer"),
        Case("unused $defs are read but check nothing", ["$defs": ["X": ["type": "string"]], "type": "integer"], 3, nil),
        Case("enum through ref", ["$defs": ["Kind": ["type": "string", "enum": ["plain", "todo"]]],
                                  "properties": ["kind": ["$ref": "#/$defs/Kind"]]], ["kind": "memo"],
             "params.kind: expected one of [\"plain\",\"todo\"]"),
    ]

    @Test(arguments: referenceCases)
    func validatesReferences(_ example: Case) throws { try example.expectResult() }

    static let malformedReferences: [(JSONValue, String)] = [
        (["$defs": ["X": [:]], "properties": ["a": ["$ref": "#/$defs/Nope"]]],
         "schema.properties.a.$ref: no definition \"Nope\" in the root schema's \"$defs\""),
        (["items": ["$ref": "#/$defs/X"]], "schema.items.$ref: no definition \"X\" in the root schema's \"$defs\""),
        // Only the root's definitions can be referred to.
        (["properties": ["p": ["$defs": ["X": [:]], "items": ["$ref": "#/$defs/X"]]]],
         "schema.properties.p.items.$ref: no definition \"X\""),
        (["$ref": "http://example.com/note.json"],
         "schema.$ref: must be \"#/$defs/NAME\" (a definition of the root schema), got \"http://example.com/note.json\""),
        (["$ref": "#/definitions/X"], "schema.$ref: must be \"#/$defs/NAME\""),
        (["$ref": "#"], "schema.$ref: must be \"#/$defs/NAME\""),
        (["$ref": "#/$defs/"], "schema.$ref: must be \"#/$defs/NAME\""),
        (["$defs": ["a": ["$defs": ["b": [:]]]], "items": ["$ref": "#/$defs/a/$defs/b"]], "schema.items.$ref: must be \"#/$defs/NAME\""),
        (["$defs": ["a~b": [:]], "items": ["$ref": "#/$defs/a~0b"]], "schema.items.$ref: must be \"#/$defs/NAME\""),
        (["$ref": 3], "schema.$ref: must be a string, got integer"),
        (["$defs": ["A": ["$ref": "#/$defs/B"], "B": ["$ref": "#/$defs/A"]]],
         "schema.$defs.A: a cycle of \"$ref\" with no object or array in between: A -> B -> A"),
        (["$defs": ["A": ["$ref": "#/$defs/A"]]], "schema.$defs.A: a cycle of \"$ref\" with no object or array in between: A -> A"),
        (["$defs": ["A": ["$ref": "#/$defs/B"], "B": ["$ref": "#/$defs/C"], "C": ["$ref": "#/$defs/B"]]],
         "schema.$defs.B: a cycle of \"$ref\" with no object or array in between: B -> C -> B"),
        (["$defs": ["A": [:]], "properties": ["x": ["$ref": "#/$defs/A", "type": "object"]]],
         "schema.properties.x: \"$ref\" allows no other keyword but \"description\" and \"$defs\", found \"type\""),
        (["$defs": ["A": [:]], "items": ["$ref": "#/$defs/A", "title": "T"]],
         "schema.items: \"$ref\" allows no other keyword but \"description\" and \"$defs\", found \"title\""),
        (["$defs": ["A": [:]], "items": ["$ref": "#/$defs/A", "description": 1]], "schema.items.description: must be a string"),
        (["title": 3], "schema.title: must be a string"),
        (["properties": ["p": ["title": ["x"]]]], "schema.properties.p.title: must be a string"),
        (["$defs": []], "schema.$defs: must be an object of schemas"),
        (["$defs": ["A": "string"]], "schema.$defs.A: a schema must be an object, got string"),
        (["$defs": ["a b": ["type": "strin"]]], "schema.$defs[\"a b\"].type: unknown type name \"strin\""),
        (["properties": ["p": ["$defs": ["X": ["type": "strin"]]]]], "schema.properties.p.$defs.X.type: unknown type name \"strin\""),
        // A malformed `$defs` is the error, not the reference to what it would hold.
        (["properties": ["a": ["$ref": "#/$defs/A"]], "$defs": ["A": ["required": "x"]]], "schema.$defs.A.required: must be an array of strings"),
    ]

    @Test(arguments: malformedReferences)
    func rejectsMalformedReferences(json: JSONValue, messagePrefix: String) {
        #expect {
            try Schema(json: json)
        } throws: { error in
            guard let error = error as? MediatorError else { return false }
            return error.code == .badRequest && error.message.hasPrefix(messagePrefix)
        }
    }

    @Test func recursiveTypeChecksAsDeepAsTheParserAllows() throws {
        let schema = try Schema(json: Self.tree)
        // 60 levels of Node: 120 of JSON nesting, under the parser's 128.
        var node: JSONValue = ["name": "leaf"]
        for level in 0..<60 { node = ["name": .string("n\(level)"), "children": [node]] }
        let text = String(decoding: (["root": node] as JSONValue).encoded, as: UTF8.self)
        let parsed = try JSONParser.parse(text)
        #expect(schema.validate(parsed) == nil)

        var bad: JSONValue = ["name": 1]
        for _ in 0..<60 { bad = ["name": "n", "children": [bad]] }
        let message = schema.validate(["root": bad])?.message
        #expect(message?.hasSuffix(".children[0].name: expected string, got integer") == true)
        #expect(message?.hasPrefix("params.root.children[0].children[0]") == true)
    }

    @Test func recursiveTypeStopsAtAValueTooDeepToCheck() throws {
        // Only a value built in code gets this deep; checking stops instead of exhausting the stack.
        let schema = try Schema(json: Self.tree)
        var node: JSONValue = ["name": "leaf"]
        for _ in 0..<1000 { node = ["name": "n", "children": [node]] }
        let error = schema.validate(["root": node])
        #expect(error?.code == .invalidParams)
        #expect(error?.message.hasSuffix(": nested too deeply to check") == true)
    }

    @Test func longChainOfReferencesIsReadOnceAndCheckedInOneHop() throws {
        var definitions: [String: JSONValue] = ["D5000": ["type": "integer"]]
        for index in 0..<5000 { definitions["D\(index)"] = ["$ref": .string("#/$defs/D\(index + 1)")] }
        let schema = try Schema(json: ["$defs": .object(definitions), "properties": ["x": ["$ref": "#/$defs/D0"]]])
        #expect(schema.validate(["x": 1]) == nil)
        #expect(schema.validate(["x": "s"])?.message == "params.x: expected integer, got string")
    }

    @Test func exposesDefinitionsReferencesAndTitles() throws {
        let schema = try Schema(json: Self.notes)
        #expect(schema.title == nil)
        #expect(schema.reference == nil)
        #expect(schema.referenced == nil)
        #expect(Array(schema.definitions.keys) == ["Note"])
        let note = try #require(schema.definitions["Note"])
        #expect(note.title == "Note")
        #expect(note.required == ["id", "text"])
        #expect(note.properties["due"]?.types == ["string", "null"])
        #expect(note.json == Self.notes["$defs"]?["Note"])

        let items = try #require(schema.properties["notes"]?.items)
        #expect(items.reference == "#/$defs/Note")
        #expect(items.referenceName == "Note")
        #expect(items.types == nil)
        #expect(items.referenced == note)
        // A definition reached from a sub-schema still resolves against the root.
        #expect(items.referenced?.properties["id"]?.validate("x", path: "id")?.message == "id: expected integer, got string")

        let tree = try Schema(json: Self.tree)
        let children = try #require(tree.definitions["Node"]?.properties["children"]?.items)
        #expect(children.referenced?.properties["children"]?.items?.referenced?.required == ["name"])
        #expect(tree.properties["root"]?.description == "the top")
        #expect(tree.properties["root"]?.validate(["name": 1], path: "root")?.message == "root.name: expected string, got integer")
    }

    @Test func exposesAdditionalProperties() throws {
        #expect(try Schema(json: [:]).additionalProperties == .allowed)
        #expect(try Schema(json: ["additionalProperties": true]).additionalProperties == .allowed)
        #expect(try Schema(json: ["additionalProperties": false]).additionalProperties == .forbidden)
        let extra = try Schema(json: ["additionalProperties": ["type": "string"]]).additionalProperties
        #expect(extra == .schema(try Schema(json: ["type": "string"])))
        guard case .schema(let schema) = extra else { return }
        #expect(schema.types == ["string"])
    }

    @Test func referencesCompareByJSON() throws {
        let a = try Schema(json: Self.tree)
        let b = try Schema(json: Self.tree)
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != (try Schema(json: Self.notes)))
    }

    @Test(arguments: cases)
    func validates(_ example: Case) throws { try example.expectResult() }

    @Test func pathRootCanBeChosen() throws {
        let schema = try Schema(json: ["type": "object", "properties": ["ok": ["type": "boolean"]]])
        let error = schema.validate(["ok": 1], path: "result")
        #expect(error?.message == "result.ok: expected boolean, got integer")
    }

    static let malformed: [(JSONValue, String)] = [
        ("string", "schema: a schema must be an object, got string"),
        (true, "schema: a schema must be an object, got boolean"),
        (["type": "strin"], "schema.type: unknown type name \"strin\""),
        (["type": 3], "schema.type: must be a type name or an array of type names"),
        (["type": ["string", 1]], "schema.type: must be a type name or an array of type names"),
        (["type": ["string", "float"]], "schema.type: unknown type name \"float\""),
        (["type": []], "schema.type: must not be an empty array"),
        (["required": "title"], "schema.required: must be an array of strings"),
        (["required": ["title", 2]], "schema.required: must be an array of strings"),
        (["properties": ["a", "b"]], "schema.properties: must be an object of schemas"),
        (["properties": ["title": "string"]], "schema.properties.title: a schema must be an object, got string"),
        (["properties": ["title": ["type": "text"]]], "schema.properties.title.type: unknown type name \"text\""),
        (["properties": ["a b": ["type": "text"]]], "schema.properties[\"a b\"].type: unknown type name \"text\""),
        (["items": [["type": "string"]]], "schema.items: must be a schema object"),
        (["items": ["type": "strng"]], "schema.items.type: unknown type name \"strng\""),
        (["enum": "a"], "schema.enum: must be an array"),
        (["enum": []], "schema.enum: must not be empty"),
        (["additionalProperties": "no"], "schema.additionalProperties: must be a boolean or a schema object"),
        (["additionalProperties": ["type": 1]], "schema.additionalProperties.type: must be a type name or an array of type names"),
        (["description": 5], "schema.description: must be a string"),
        (["items": ["properties": ["x": ["required": [1]]]]], "schema.items.properties.x.required: must be an array of strings"),
    ]

    @Test(arguments: malformed)
    func rejectsMalformed(json: JSONValue, messagePrefix: String) {
        #expect {
            try Schema(json: json)
        } throws: { error in
            guard let error = error as? MediatorError else { return false }
            return error.code == .badRequest && error.message.hasPrefix(messagePrefix)
        }
    }

    @Test func rejectsDeepNesting() {
        var json: JSONValue = ["type": "string"]
        for _ in 0..<100 { json = ["items": json] }
        #expect(throws: MediatorError.self) { try Schema(json: json) }

        var shallow: JSONValue = ["type": "string"]
        for _ in 0..<10 { shallow = ["items": shallow] }
        #expect(throws: Never.self) { try Schema(json: shallow) }
    }

    @Test func keepsJSONAndKeywords() throws {
        let schema = try Schema(json: Self.detail)
        #expect(schema.json == Self.detail)
        #expect(schema.description == "Show a detail view")
        #expect(schema.types == ["object"])
        #expect(schema.required == ["title"])
        #expect(Set(schema.properties.keys) == ["title", "count", "ratio", "tags", "owner"])
        #expect(schema.properties["tags"]?.items?.enumValues == ["a", "b"])
        #expect(schema.items == nil)
    }

    @Test func equalityFollowsJSON() throws {
        let a = try Schema(json: ["type": "string", "description": "x"])
        let b = try Schema(json: ["description": "x", "type": "string"])
        let c = try Schema(json: ["type": "string"])
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != c)
    }
}
