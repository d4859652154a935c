import MediatorInterface
import MediatorProtocol
import Testing

/// The example of the contract (section 1): every feature of the format.
let notesInterface = #"""
    {
      "target": "Notes",
      "description": "Keeps short notes",
      "actions": [
        {"name": "add", "description": "Add a note",
         "params": {"type": "object", "required": ["text"],
                    "properties": {"text": {"type": "string"},
                                   "tags": {"type": "array", "items": {"type": "string"}},
                                   "due": {"type": ["string", "null"]},
                                   "note_kind": {"type": "string", "enum": ["plain", "todo"]}}},
         "result": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}}},
        {"name": "list", "result": {"type": "object", "required": ["notes"],
           "properties": {"notes": {"type": "array", "items": {"$ref": "#/$defs/Note"}}},
           "$defs": {"Note": {"type": "object", "title": "Note", "required": ["id", "text"],
                              "properties": {"id": {"type": "integer"}, "text": {"type": "string"}}}}}},
        {"name": "watch", "more": true, "result": {"type": "object"}},
        {"name": "touch", "oneway": true}
      ]
    }
    """#

struct GoodInterfaceCase: Sendable, CustomTestStringConvertible {
    var name: String
    var json: String
    var target: String
    var actions: [String]
    var testDescription: String { name }
}

struct BadInterfaceCase: Sendable, CustomTestStringConvertible {
    var name: String
    var json: String
    /// The exact lines `mediatorctl interface check` prints, file `f.json`.
    var problems: [String]
    var testDescription: String { name }
}

/// An interface of one action whose params are `schema`.
private func params(_ schema: String) -> String {
    #"{"target": "T", "actions": [{"name": "a", "params": \#(schema)}]}"#
}

private let goodCases: [GoodInterfaceCase] = [
    GoodInterfaceCase(
        name: "descriptors in params, results and a stream's partials, through $ref and items, nullable",
        json: #"""
            {"target": "T", "actions": [
              {"name": "open", "params": {"type": "object", "required": ["dir"], "properties": {"dir": {"type": "object", "format": "fd", "description": "a directory"}}},
               "result": {"type": "object", "properties": {"file": {"$ref": "#/$defs/File"}, "more": {"type": "array", "items": {"$ref": "#/$defs/File"}}},
                          "$defs": {"File": {"type": ["object", "null"], "format": "fd", "title": "File"}}}},
              {"name": "tail", "more": true, "result": {"type": "object", "properties": {"chunk": {"format": "fd"}}}},
              {"name": "drop", "oneway": true, "params": {"type": "object", "properties": {"x": {"type": "object", "format": "fd"}}}},
              {"name": "root", "params": {"type": "object", "format": "fd"}, "result": {"format": "fd"}}]}
            """#,
        target: "T", actions: ["open", "tail", "drop", "root"]),
    GoodInterfaceCase(name: "the contract's example", json: notesInterface, target: "Notes",
                      actions: ["add", "list", "watch", "touch"]),
    GoodInterfaceCase(name: "bare names, no description", json: #"{"target": "T", "actions": ["a", "b_c.d-e"]}"#,
                      target: "T", actions: ["a", "b_c.d-e"]),
    GoodInterfaceCase(name: "no actions", json: #"{"target": "T", "actions": []}"#, target: "T", actions: []),
    GoodInterfaceCase(
        name: "what describe adds",
        json: #"""
            {"target": "T", "description": "", "actions": [{"name": "a", "url": false}], "mode": "pool",
             "state": "running", "calls_served": 3, "instances": [{"instance": 1, "pid": 2}],
             "activation": "exec", "uptime_s": 1.5}
            """#,
        target: "T", actions: ["a"]),
    GoodInterfaceCase(
        name: "a recursive type through an object and an array",
        json: params(#"""
            {"type": "object", "properties": {"root": {"$ref": "#/$defs/Tree"}},
             "$defs": {"Tree": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
                                                                 "parent": {"$ref": "#/$defs/Tree", "description": "up"}}}}}
            """#),
        target: "T", actions: ["a"]),
    GoodInterfaceCase(
        name: "an alias chain that ends in a type, and the same definition in two actions",
        json: #"""
            {"target": "T", "actions": [
              {"name": "a", "params": {"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"type": "object"}}}},
              {"name": "b", "result": {"$defs": {"B": {"type": "object"}}, "$ref": "#/$defs/B"}},
              {"name": "c", "params": null, "result": null, "description": null, "more": false, "oneway": false}]}
            """#,
        target: "T", actions: ["a", "b", "c"]),
    GoodInterfaceCase(
        name: "every keyword",
        json: params(#"""
            {"type": "object", "title": "A", "description": "d", "additionalProperties": {"type": "integer"},
             "properties": {"x": {"enum": [1, "a", null]}, "y": {"type": ["number", "null"]}}, "required": ["x"]}
            """#),
        target: "T", actions: ["a"]),
]

private let badCases: [BadInterfaceCase] = [
    BadInterfaceCase(
        name: "descriptors: other keywords, another type, another format",
        json: params(#"""
            {"type": "object", "properties": {
               "a": {"type": "object", "format": "fd", "properties": {"x": {"type": "string"}}, "default": {"$fd": 0}},
               "b": {"type": "string", "format": "fd"},
               "c": {"type": ["object", "array"], "format": "fd"},
               "d": {"type": "string", "format": "date-time"},
               "e": {"format": 3}}}
            """#),
        problems: [
            #"f.json: actions[0].params.properties.a: a descriptor ("format": "fd") is {"$fd": I} and has no other keywords but "type", "description" and "title"; found "default", "properties""#,
            #"f.json: actions[0].params.properties.a.default: is not a value of its own schema: default: {"$fd": 0} refers to no descriptor: the message has no "fds""#,
            #"f.json: actions[0].params.properties.b.type: a descriptor's type is "object" (or ["object", "null"]), got "string""#,
            #"f.json: actions[0].params.properties.c.type: a descriptor's type is "object" (or ["object", "null"]), got ["object","array"]"#,
            #"f.json: actions[0].params.properties.d.format: unknown format "date-time"; the one format is "fd", a file descriptor sent with the message"#,
            #"f.json: actions[0].params.properties.e.format: unknown format 3; the one format is "fd", a file descriptor sent with the message"#,
        ]),
    BadInterfaceCase(
        name: "descriptors where generated code cannot carry them",
        json: #"""
            {"target": "T", "actions": [
              {"name": "a", "params": {"type": "object", "additionalProperties": {"type": "object", "format": "fd"}}},
              {"name": "b", "result": {"type": "object", "properties": {"x": {"anyOf": [{"type": "object", "format": "fd"}, {"type": "string"}]}}}},
              {"name": "c", "result": {"type": "object", "properties": {"x": {"oneOf": [{"$ref": "#/$defs/Holder"}, {"type": "null"}]}},
                                       "$defs": {"Holder": {"type": "object", "properties": {"files": {"type": "array", "items": {"$ref": "#/$defs/File"}}}},
                                                 "File": {"type": "object", "format": "fd"}}}},
              {"name": "d", "params": {"properties": {"f": {"format": "fd"}}}}]}
            """#,
        problems: [
            #"f.json: actions[0].params.additionalProperties.format: a descriptor cannot be under "additionalProperties": generated code carries descriptors in members ("properties") and array items ("items") of params and results"#,
            #"f.json: actions[1].result.properties.x.anyOf[0].format: a descriptor cannot be in an alternative of "anyOf": generated code carries descriptors in members ("properties") and array items ("items") of params and results"#,
            #"f.json: actions[2].result.properties.x.oneOf[0].$ref: refers to "Holder", which holds a descriptor ("format": "fd"); a descriptor cannot be in an alternative of "oneOf": generated code carries descriptors in members ("properties") and array items ("items") of params and results"#,
            #"f.json: actions[3].params.properties.f.format: a descriptor cannot be below a schema of no one "type" (free-form in generated code): generated code carries descriptors in members ("properties") and array items ("items") of params and results"#,
        ]),
    BadInterfaceCase(name: "not JSON", json: #"{"target": "T","#, problems: [
        "f.json: is not valid JSON: expected a member name at byte 15",
    ]),
    BadInterfaceCase(name: "not an object", json: #"["T"]"#, problems: [
        "f.json: an interface file must be a JSON object, got array",
    ]),
    BadInterfaceCase(name: "empty object", json: "{}", problems: [
        "f.json: target: is required",
        "f.json: actions: is required",
    ]),
    BadInterfaceCase(
        name: "wrong types at the top",
        json: #"{"target": 5, "description": [], "actions": {"a": 1}, "version": 2, "odd name": 1}"#,
        problems: [
            #"f.json: ["odd name"]: unknown member; known members: target, description, actions (and mode, state, calls_served, instances, activation, uptime_s, which describe adds)"#,
            "f.json: version: unknown member; known members: target, description, actions (and mode, state, calls_served, instances, activation, uptime_s, which describe adds)",
            "f.json: target: must be a string, got 5",
            "f.json: description: must be a string, got []",
            #"f.json: actions: must be an array of action names or specs, got {"a":1}"#,
        ]),
    BadInterfaceCase(name: "bad target name", json: #"{"target": "1x", "actions": []}"#, problems: [
        #"f.json: target: invalid target name "1x": expected [A-Za-z][A-Za-z0-9_.-]*, at most 128 bytes"#,
    ]),
    BadInterfaceCase(
        name: "bad action specs",
        json: #"{"target": "T", "actions": ["", 5, {"description": 1}, {"name": 2}, {"name": "a", "url": "no", "returns": {}}]}"#,
        problems: [
            #"f.json: actions[0]: invalid action name "": expected [A-Za-z_][A-Za-z0-9_.-]*, at most 128 bytes"#,
            "f.json: actions[1]: an action spec must be an action name or an object, got integer",
            "f.json: actions[2].name: is required",
            "f.json: actions[2].description: must be a string, got 1",
            "f.json: actions[3].name: must be a string, got 2",
            "f.json: actions[4].returns: unknown member of an action spec; known members: name, description, params, result, url, more, oneway",
            #"f.json: actions[4].url: must be a boolean, got "no""#,
        ]),
    BadInterfaceCase(
        name: "duplicate actions",
        json: #"{"target": "T", "actions": ["a", {"name": "b"}, {"name": "a"}, "b"]}"#,
        problems: [
            #"f.json: actions[2].name: action "a" is declared twice (first at actions[0])"#,
            #"f.json: actions[3]: action "b" is declared twice (first at actions[1])"#,
        ]),
    BadInterfaceCase(
        name: "more and oneway together; oneway with a result",
        json: #"{"target": "T", "actions": [{"name": "a", "more": true, "oneway": true}, {"name": "b", "oneway": true, "result": {}}, {"name": "c", "more": 1}]}"#,
        problems: [
            #"f.json: actions[0]: "more" and "oneway" exclude each other: a oneway action never answers"#,
            "f.json: actions[1].result: a oneway action never answers, so it has no result",
            "f.json: actions[2].more: must be a boolean, got 1",
        ]),
    BadInterfaceCase(
        name: "wrong types of keywords",
        json: params(#"""
            {"type": "obj", "properties": [], "required": "x", "items": true, "enum": [], "additionalProperties": 1,
             "description": 2, "title": {}}
            """#),
        problems: [
            #"f.json: actions[0].params.type: unknown type name "obj"; expected one of null, boolean, integer, number, string, array, object"#,
            "f.json: actions[0].params.properties: must be an object of schemas, got []",
            #"f.json: actions[0].params.required: must be an array of strings, got "x""#,
            "f.json: actions[0].params.items: must be a schema object, got true",
            "f.json: actions[0].params.enum: must not be empty",
            "f.json: actions[0].params.additionalProperties: must be a boolean or a schema object, got 1",
            "f.json: actions[0].params.description: must be a string, got 2",
            "f.json: actions[0].params.title: must be a string, got {}",
        ]),
    BadInterfaceCase(
        name: "deeper problems name their path",
        json: params(#"""
            {"type": "object", "required": ["text", 3, "text", "gone"],
             "properties": {"text": {"type": ["string", "string"]}, "due": {"type": ["strin", "null"]},
                            "tags": {"type": "array", "items": {"type": [], "minItems": -1, "pattern": "^a"}, "maxItems": 2}, "n": 5, "odd-name!": {"type": 1}}}
            """#),
        problems: [
            "f.json: actions[0].params.properties.due.type: unknown type name \"strin\"; expected one of null, boolean, integer, number, string, array, object",
            "f.json: actions[0].params.properties.n: a schema must be an object, got 5",
            #"f.json: actions[0].params.properties["odd-name!"].type: must be a type name or an array of type names, got 1"#,
            "f.json: actions[0].params.properties.tags.items.pattern: unknown schema keyword; known keywords: type, properties, required, items, enum, additionalProperties, description, $defs, $ref, title, const, default, format, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems, maxItems, anyOf, oneOf",
            "f.json: actions[0].params.properties.tags.items.type: must not be an empty array",
            "f.json: actions[0].params.properties.tags.items.minItems: must be a non-negative integer, got -1",
            "f.json: actions[0].params.properties.text.type: lists \"string\" twice",
            "f.json: actions[0].params.required[1]: must be a string, got 3",
            "f.json: actions[0].params.required[2]: \"text\" is listed twice",
            "f.json: actions[0].params.required[3]: \"gone\" is not declared in \"properties\"",
        ]),
    BadInterfaceCase(
        name: "$ref to nothing, of the wrong form, with other keywords",
        json: params(#"""
            {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}, "b": {"$ref": "#/definitions/B"},
             "c": {"$ref": 5}, "d": {"$ref": "#/$defs/D", "type": "object", "title": "D"}, "e": {"$ref": "#/$defs/Nested"}},
             "$defs": {"D": {"type": "object", "$defs": {"Nested": {"type": "string"}}}}}
            """#),
        problems: [
            #"f.json: actions[0].params.properties.a.$ref: refers to nothing: no "Missing" in the "$defs" of actions[0].params"#,
            ##"f.json: actions[0].params.properties.b.$ref: must be of the form "#/$defs/NAME", got "#/definitions/B""##,
            ##"f.json: actions[0].params.properties.c.$ref: must be a string of the form "#/$defs/NAME", got 5"##,
            #"f.json: actions[0].params.properties.d: a schema with "$ref" has no other keywords but "description" and "$defs"; found "title", "type""#,
            #"f.json: actions[0].params.properties.e.$ref: refers to nothing: no "Nested" in the "$defs" of actions[0].params"#,
        ]),
    BadInterfaceCase(
        name: "$ref cycles with nothing between",
        json: #"""
            {"target": "T", "actions": [
              {"name": "a", "params": {"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}},
              {"name": "b", "result": {"$defs": {"Self": {"$ref": "#/$defs/Self"}, "Into": {"$ref": "#/$defs/Self"}}}}]}
            """#,
        problems: [
            "f.json: actions[0].params.$defs.A.$ref: a cycle of $refs with no object or array between: A -> B -> A",
            "f.json: actions[1].result.$defs.Self.$ref: a cycle of $refs with no object or array between: Self -> Self",
        ]),
    BadInterfaceCase(
        name: "one $defs name, two definitions",
        json: #"""
            {"target": "T", "actions": [
              {"name": "a", "params": {"type": "object", "$defs": {"Note": {"type": "object"}}}},
              {"name": "b", "result": {"$defs": {"Note": {"type": "string"}}}}]}
            """#,
        problems: [
            "f.json: actions[1].result.$defs.Note: differs from the definition at actions[0].params.$defs.Note; one name is one generated type",
        ]),
    BadInterfaceCase(
        name: "a schema that is not an object; an unknown keyword at the root",
        json: #"{"target": "T", "actions": [{"name": "a", "params": "object", "result": {"type": "object", "allOf": []}}]}"#,
        problems: [
            #"f.json: actions[0].params: a schema must be an object, got "object""#,
            "f.json: actions[0].result.allOf: unknown schema keyword; known keywords: type, properties, required, items, enum, additionalProperties, description, $defs, $ref, title, const, default, format, minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems, maxItems, anyOf, oneOf",
        ]),
    BadInterfaceCase(
        name: "anyOf and oneOf of the wrong form, or beside a constraint",
        json: params(#"""
            {"type": "object", "properties": {
              "a": {"anyOf": []}, "b": {"oneOf": {"type": "string"}}, "c": {"anyOf": [{"type": "string"}], "oneOf": [{"type": "integer"}]},
              "d": {"anyOf": [{"type": "string"}], "type": "string", "description": "d"}, "e": {"oneOf": [{"type": "strin"}]},
              "f": {"anyOf": [{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}]}}}
            """#),
        problems: [
            "f.json: actions[0].params.properties.a.anyOf: must not be empty",
            "f.json: actions[0].params.properties.b.oneOf: must be an array of schemas, got {\"type\":\"string\"}",
            "f.json: actions[0].params.properties.c: has both \"anyOf\" and \"oneOf\"; a schema has at most one (a generated type is one choice)",
            "f.json: actions[0].params.properties.d: a schema with \"anyOf\" has no other keywords but \"description\", \"title\", \"default\" and \"$defs\"; found \"type\" (put them in each alternative)",
            "f.json: actions[0].params.properties.e.oneOf[0].type: unknown type name \"strin\"; expected one of null, boolean, integer, number, string, array, object",
            "f.json: actions[0].params.properties.f.anyOf: at most 16 schemas, got 17",
        ]),
    BadInterfaceCase(
        name: "a default that its own schema refuses",
        json: params(#"""
            {"type": "object", "properties": {"limit": {"type": "integer", "maximum": 100, "default": 1000},
             "name": {"type": "string", "minLength": 2, "default": "ok"}, "kind": {"$ref": "#/$defs/Kind"},
             "kinds": {"type": "array", "items": {"$ref": "#/$defs/Kind"}, "default": ["a", "c"]}},
             "$defs": {"Kind": {"type": "string", "enum": ["a", "b"], "default": "b"}}}
            """#),
        problems: [
            "f.json: actions[0].params.properties.kinds.default: is not a value of its own schema: default[1]: expected one of [\"a\",\"b\"]",
            "f.json: actions[0].params.properties.limit.default: is not a value of its own schema: default: expected at most 100, got 1000",
        ]),
]

@Suite("Interface files: check")
struct InterfaceCheckTests {
    @Test(arguments: goodCases)
    func goodFile(_ testCase: GoodInterfaceCase) throws {
        let problems = InterfaceFile.check(bytes: Array(testCase.json.utf8), file: "f.json")
        #expect(problems.isEmpty, "\(problems.map(\.description))")
        let interface = try InterfaceFile(bytes: Array(testCase.json.utf8), file: "f.json")
        #expect(interface.target == testCase.target)
        #expect(interface.actions.map(\.name) == testCase.actions)
    }

    @Test(arguments: badCases)
    func badFile(_ testCase: BadInterfaceCase) {
        let problems = InterfaceFile.check(bytes: Array(testCase.json.utf8), file: "f.json")
        #expect(problems.map(\.description) == testCase.problems)
        #expect(throws: InterfaceProblems.self) { try InterfaceFile(bytes: Array(testCase.json.utf8), file: "f.json") }
    }

    @Test func theContractsExampleReadsIntoActionSpecs() throws {
        let interface = try InterfaceFile(bytes: Array(notesInterface.utf8), file: "Notes.mediator.json")
        #expect(interface.description == "Keeps short notes")
        let add = try #require(interface.actions.first)
        #expect(add.params?.required == ["text"])
        #expect(add.result?.properties["id"]?.types == ["integer"])
        #expect(interface.actionObjects[2]["more"] == true)
        #expect(interface.actionObjects[3]["oneway"] == true)
    }

    @Test func problemLines() {
        #expect(InterfaceProblem(file: "a.json", member: "target", reason: "is required").description
                == "a.json: target: is required")
        #expect(InterfaceProblem(file: "a.json", member: "", reason: "is not valid JSON").description
                == "a.json: is not valid JSON")
    }

    /// Never a crash, whatever the bytes: every prefix of a good file, and
    /// the file with each byte in turn replaced by characters that change its structure.
    @Test func truncationsAndMutationsNeverCrash() {
        let bytes = Array(notesInterface.utf8)
        for length in 0..<bytes.count {
            _ = InterfaceFile.check(bytes: bytes[0..<length], file: "f.json")
        }
        for index in stride(from: 0, to: bytes.count, by: 3) {
            for replacement in "{}[]\",:0n".utf8 {
                var mutated = bytes
                mutated[index] = replacement
                let problems = InterfaceFile.check(bytes: mutated, file: "f.json")
                if let interface = try? InterfaceFile(bytes: mutated, file: "f.json") {
                    #expect(problems.isEmpty)
                    _ = InterfaceDiff.changes(from: interface, to: interface)
                }
            }
        }
    }

    @Test func deepNestingIsAProblemNotACrash() {
        let depth = 100
        let schema = String(repeating: #"{"type": "array", "items": "#, count: depth) + "{}" + String(repeating: "}", count: depth)
        let problems = InterfaceFile.check(bytes: Array(params(schema).utf8), file: "f.json")
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.reason.contains("nested too deeply") == true, "\(problems)")
    }
}
