import MediatorInterface
import MediatorProtocol
import Testing

struct DiffCase: Sendable, CustomTestStringConvertible {
    var name: String
    /// The actions of the old and the new file (target T unless given).
    var old: String
    var new: String
    /// The exact lines of `mediatorctl interface diff`.
    var changes: [String]
    var testDescription: String { name }
}

/// One action `a` with these params.
private func withParams(_ schema: String) -> String { #"[{"name": "a", "params": \#(schema)}]"# }
/// One action `a` with this result.
private func withResult(_ schema: String) -> String { #"[{"name": "a", "result": \#(schema)}]"# }
/// An object schema of these properties and required names.
private func object(_ properties: String, required: [String] = [], extra: String = "") -> String {
    let list = required.map { "\"\($0)\"" }.joined(separator: ", ")
    return #"{"type": "object", "properties": {\#(properties)}, "required": [\#(list)]\#(extra)}"#
}

private let diffCases: [DiffCase] = [
    DiffCase(name: "to and from a descriptor breaks params and results alike",
             old: #"[{"name": "a", "params": \#(object(#""f": {"type": "object"}, "g": {"type": "object", "format": "fd"}, "h": {"type": "object", "format": "fd"}"#))}, {"name": "b", "result": \#(object(#""f": {"type": "integer"}"#))}]"#,
             new: #"[{"name": "a", "params": \#(object(#""f": {"type": "object", "format": "fd"}, "g": {"type": "object"}, "h": {"type": ["object", "null"], "format": "fd", "description": "d"}"#))}, {"name": "b", "result": \#(object(#""f": {"type": "object", "format": "fd"}"#))}]"#,
             changes: [
                #"breaking actions.a.params.properties.f: became a descriptor ("format": "fd"), was type "object""#,
                #"breaking actions.a.params.properties.g: no longer a descriptor ("format": "fd"), now type "object""#,
                #"compatible actions.a.params.properties.h.type: made nullable (type "object" to ["object","null"])"#,
                #"breaking actions.b.result.properties.f: became a descriptor ("format": "fd"), was type "integer""#,
             ]),
    DiffCase(name: "anyOf and oneOf: alternatives added, removed, changed, and the keyword switched",
             old: #"[{"name": "a", "params": \#(object(#""x": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "y": {"oneOf": [{"type": "string"}]}, "z": {"anyOf": [{"type": "string"}]}"#))}, {"name": "b", "result": {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "integer"}]}}]"#,
             new: #"[{"name": "a", "params": \#(object(#""x": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "boolean"}]}, "y": {"oneOf": [{"type": "string"}, {"type": "integer"}]}, "z": {"oneOf": [{"type": "string"}]}"#))}, {"name": "b", "result": {"anyOf": [{"type": "string", "maxLength": 9}]}}]"#,
             changes: [
                "compatible actions.a.params.properties.x.anyOf[2]: alternative added",
                "breaking actions.a.params.properties.y.oneOf[1]: alternative added",
                "breaking actions.a.params.properties.z.oneOf: anyOf became oneOf",
                "breaking actions.b.result.anyOf[0].maxLength: maxLength raised from 5 to 9",
                "compatible actions.b.result.anyOf[1]: alternative removed",
             ]),
    DiffCase(name: "no change, members reordered", old: #"["a", {"name": "b", "params": {"type": "object", "required": [], "properties": {}}}]"#,
             new: #"[{"name": "b", "params": {"properties": {}, "required": [], "type": "object"}}, "a"]"#, changes: []),
    DiffCase(name: "action removed and added", old: #"["a", "b"]"#, new: #"["b", "c"]"#, changes: [
        "breaking actions.a: action removed",
        "compatible actions.c: action added",
    ]),
    DiffCase(name: "descriptions and titles do not count",
             old: #"[{"name": "a", "description": "x", "params": {"type": "object", "title": "P"}}]"#,
             new: #"[{"name": "a", "description": "y", "params": {"type": "object", "title": "Q", "description": "z"}}]"#,
             changes: []),
    DiffCase(name: "new required param; new optional param",
             old: withParams(object(#""a": {"type": "string"}"#)),
             new: withParams(object(#""a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "integer"}"#, required: ["b"])),
             changes: [
                "breaking actions.a.params.properties.b: new required param",
                "compatible actions.a.params.properties.c: new optional param",
             ]),
    DiffCase(name: "a params schema added to an action without one",
             old: #"["a", "b"]"#,
             new: #"[{"name": "a", "params": \#(object(#""x": {"type": "string"}"#, required: ["x"]))}, {"name": "b", "params": \#(object(#""y": {"type": "string"}"#))}]"#,
             changes: [
                "breaking actions.a.params.properties.x: new required param",
                "compatible actions.b.params.properties.y: new optional param",
             ]),
    DiffCase(name: "params schema removed", old: withParams(object(#""a": {"type": "string"}"#)), new: #"["a"]"#, changes: [
        "compatible actions.a.params: params schema removed: params are no longer checked",
    ]),
    DiffCase(name: "param removed: compatible unless additionalProperties is false",
             old: #"[{"name": "a", "params": \#(object(#""x": {}, "y": {}"#))}, {"name": "b", "params": \#(object(#""x": {}, "y": {}"#))}]"#,
             new: #"[{"name": "a", "params": \#(object(#""x": {}"#))}, {"name": "b", "params": \#(object(#""x": {}"#, extra: #", "additionalProperties": false"#))}]"#,
             changes: [
                "compatible actions.a.params.properties.y: param removed (callers that still send it are not refused)",
                #"breaking actions.b.params.properties.y: param removed, and "additionalProperties" is false: callers that still send it are refused"#,
                "breaking actions.b.params.additionalProperties: made false: params that are not declared are refused",
             ]),
    DiffCase(name: "param made required, made optional",
             old: withParams(object(#""x": {}, "y": {}"#, required: ["y"])),
             new: withParams(object(#""x": {}, "y": {}"#, required: ["x"])),
             changes: [
                "breaking actions.a.params.properties.x: param made required",
                "compatible actions.a.params.properties.y: param made optional",
             ]),
    DiffCase(name: "param types narrowed",
             old: withParams(object(#""d": {"type": ["string", "null"]}, "n": {"type": "number"}, "k": {"enum": ["a", "b"]}, "e": {}"#)),
             new: withParams(object(#""d": {"type": "string"}, "n": {"type": "integer"}, "k": {"enum": ["a"]}, "e": {"enum": [1]}"#)),
             changes: [
                #"breaking actions.a.params.properties.d.type: no longer nullable (type ["string","null"] to "string")"#,
                #"breaking actions.a.params.properties.e.enum: enum added: only [1] allowed"#,
                #"breaking actions.a.params.properties.k.enum: enum values removed: ["b"]"#,
                #"breaking actions.a.params.properties.n.type: type narrowed from "number" to "integer""#,
             ]),
    DiffCase(name: "param types widened",
             old: withParams(object(#""d": {"type": "string"}, "n": {"type": "integer"}, "k": {"enum": ["a"]}, "e": {"enum": [1]}, "t": {"type": "string"}"#)),
             new: withParams(object(#""d": {"type": ["string", "null"]}, "n": {"type": "number"}, "k": {"enum": ["a", "b"]}, "e": {}, "t": {"type": ["string", "integer"]}"#)),
             changes: [
                #"compatible actions.a.params.properties.d.type: made nullable (type "string" to ["string","null"])"#,
                "compatible actions.a.params.properties.e.enum: enum removed: any value allowed",
                #"compatible actions.a.params.properties.k.enum: enum values added: ["b"]"#,
                #"compatible actions.a.params.properties.n.type: type widened from "integer" to "number""#,
                #"compatible actions.a.params.properties.t.type: type widened from "string" to ["string","integer"]"#,
             ]),
    DiffCase(name: "param type changed; nested arrays of objects",
             old: withParams(object(#""s": {"type": "string"}, "l": {"type": "array", "items": \#(object(#""v": {"type": "integer"}"#))}"#)),
             new: withParams(object(#""s": {"type": "object"}, "l": {"type": "array", "items": \#(object(#""v": {"type": "integer"}, "w": {}"#, required: ["w"]))}"#)),
             changes: [
                "breaking actions.a.params.properties.l.items.properties.w: new required param",
                #"breaking actions.a.params.properties.s.type: type changed from "string" to "object""#,
             ]),
    DiffCase(name: "result member removed, made optional, made nullable",
             old: withResult(object(#""a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "string"}"#, required: ["a", "b", "c"])),
             new: withResult(object(#""b": {"type": "string"}, "c": {"type": ["string", "null"]}"#, required: ["c"])),
             changes: [
                "breaking actions.a.result.properties.a: result member removed",
                "breaking actions.a.result.properties.b: result member made optional",
                #"breaking actions.a.result.properties.c.type: made nullable (type "string" to ["string","null"])"#,
             ]),
    DiffCase(name: "result member added, made required, narrowed: compatible",
             old: withResult(object(#""b": {"type": ["string", "null"]}, "n": {"type": "number"}, "k": {"enum": ["x", "y"]}"#)),
             new: withResult(object(#""b": {"type": "string"}, "n": {"type": "integer"}, "k": {"enum": ["x"]}, "z": {}"#, required: ["b", "z"])),
             changes: [
                #"compatible actions.a.result.properties.b: result member made required"#,
                #"compatible actions.a.result.properties.b.type: no longer nullable (type ["string","null"] to "string")"#,
                #"compatible actions.a.result.properties.k.enum: enum values removed: ["y"]"#,
                #"compatible actions.a.result.properties.n.type: type narrowed from "number" to "integer""#,
                "compatible actions.a.result.properties.z: new result member",
             ]),
    DiffCase(name: "result type changed; enum values added to a result",
             old: withResult(object(#""k": {"enum": ["x"]}, "s": {"type": "string"}"#)),
             new: withResult(object(#""k": {"enum": ["x", "y"]}, "s": {"type": "integer"}"#)),
             changes: [
                #"breaking actions.a.result.properties.k.enum: enum values added: ["y"]"#,
                #"breaking actions.a.result.properties.s.type: type changed from "string" to "integer""#,
             ]),
    DiffCase(name: "result schema added, removed",
             old: #"["a", {"name": "b", "result": {"type": "object"}}]"#,
             new: #"[{"name": "a", "result": {"type": "object"}}, "b"]"#,
             changes: [
                "compatible actions.a.result: result schema added",
                "breaking actions.b.result: result schema removed: the result is no longer described",
             ]),
    DiffCase(name: "more, oneway and url",
             old: #"["a", {"name": "b", "more": true}, "c", {"name": "d", "oneway": true}, "e", {"name": "f", "url": false}]"#,
             new: #"[{"name": "a", "more": true}, "b", {"name": "c", "oneway": true}, "d", {"name": "e", "url": false}, {"name": "f", "url": true}]"#,
             changes: [
                #"breaking actions.a.more: now answers with a stream ("more": true)"#,
                "breaking actions.b.more: no longer answers with a stream",
                "breaking actions.c.oneway: now oneway: it never answers",
                "breaking actions.d.oneway: no longer oneway: it answers",
                #"breaking actions.e.url: no longer reachable through mediator/open ("url": false)"#,
                "compatible actions.f.url: now reachable through mediator/open",
             ]),
    DiffCase(name: "$refs are followed: moving a type into $defs or renaming it is no change",
             old: withResult(object(#""n": {"type": "array", "items": \#(object(#""id": {"type": "integer"}"#, required: ["id"]))}"#)),
             new: withResult(##"{"type": "object", "properties": {"n": {"type": "array", "items": {"$ref": "#/$defs/Note"}}}, "required": [], "$defs": {"Note": \##(object(#""id": {"type": "integer"}"#, required: ["id"]))}}"##),
             changes: []),
    DiffCase(name: "a change inside a definition is found through the $ref, also in a recursive type",
             old: withParams(##"{"type": "object", "properties": {"t": {"$ref": "#/$defs/Tree"}}, "$defs": {"Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}, "v": {"type": "number"}}}}}"##),
             new: withParams(##"{"type": "object", "properties": {"t": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}, "v": {"type": "integer"}}}}}"##),
             changes: [
                #"breaking actions.a.params.properties.t.properties.v.type: type narrowed from "number" to "integer""#,
             ]),
    DiffCase(name: "param bounds tightened",
             old: withParams(object(#""n": {"maximum": 10, "minimum": 0}, "s": {"maxLength": 5}, "c": {}"#)),
             new: withParams(object(#""n": {"maximum": 5, "minimum": 1}, "s": {"maxLength": 5, "minLength": 1}, "c": {"const": 1}"#)),
             changes: [
                "breaking actions.a.params.properties.c.const: const added",
                "breaking actions.a.params.properties.n.minimum: minimum raised from 0 to 1",
                "breaking actions.a.params.properties.n.maximum: maximum lowered from 10 to 5",
                "breaking actions.a.params.properties.s.minLength: minLength 1 added",
             ]),
    DiffCase(name: "param bounds loosened, result bounds tightened",
             old: #"[{"name": "a", "params": \#(object(#""n": {"maximum": 5}, "l": {"minItems": 2}"#)), "result": \#(object(#""r": {"maxItems": 3}"#))}]"#,
             new: #"[{"name": "a", "params": \#(object(#""n": {"maximum": 10.5}, "l": {}"#)), "result": \#(object(#""r": {"maxItems": 2}"#))}]"#,
             changes: [
                "compatible actions.a.params.properties.l.minItems: minItems removed",
                "compatible actions.a.params.properties.n.maximum: maximum raised from 5 to 10.5",
                "compatible actions.a.result.properties.r.maxItems: maxItems lowered from 3 to 2",
             ]),
    DiffCase(name: "odd names are quoted in paths", old: #"[{"name": "a.b", "params": \#(object(#""x y": {}"#))}]"#,
             new: #"[{"name": "a.b", "params": \#(object(#""x y": {}"#, required: ["x y"]))}]"#,
             changes: [#"breaking actions["a.b"].params.properties["x y"]: param made required"#]),
]

@Suite("Interface files: diff")
struct InterfaceDiffTests {
    private func interface(_ actions: String, target: String = "T") throws -> InterfaceFile {
        try InterfaceFile(bytes: Array(#"{"target": "\#(target)", "actions": \#(actions)}"#.utf8), file: target)
    }

    @Test(arguments: diffCases)
    func diff(_ testCase: DiffCase) throws {
        let changes = InterfaceDiff.changes(from: try interface(testCase.old), to: try interface(testCase.new))
        #expect(changes.map(\.description) == testCase.changes)
    }

    @Test func targetRenamed() throws {
        let changes = InterfaceDiff.changes(from: try interface("[]", target: "A"), to: try interface("[]", target: "B"))
        #expect(changes.map(\.description) == [#"breaking target: target renamed from "A" to "B""#])
    }

    @Test func theContractsExampleAgainstItselfHasNoChange() throws {
        let notes = try InterfaceFile(bytes: Array(notesInterface.utf8), file: "Notes.mediator.json")
        #expect(InterfaceDiff.changes(from: notes, to: notes).isEmpty)
    }

    @Test func changeJSON() {
        let change = InterfaceChange(breaking: true, member: "actions.a", change: "action removed")
        #expect(change.json == ["breaking": true, "member": "actions.a", "change": "action removed"])
    }
}
