import MediatorCodegen
import MediatorInterface
import MediatorProtocol
import Testing

/// Bad interfaces give a ``CodegenError`` naming the member at fault, in
/// both generators, never a crash: the problems `interface check` gives
/// (generation runs the check first, issue 23 point 14).
@Suite struct BadInterfaceTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var label: String
        var json: String
        /// The error's text must contain each of these.
        var mentions: [String]
        var testDescription: String { label }
    }

    /// A schema 70 arrays deep: over the 64 levels `interface check` allows.
    static let deep: String = {
        var schema = #"{"type": "string"}"#
        for _ in 0..<70 { schema = #"{"type": "array", "items": "# + schema + "}" }
        return #"{"target": "T", "actions": [{"name": "a", "params": "# + schema + "}]}"
    }()

    static let cases: [Case] = [
        // Free-form (JSONValue, typing.Any) would pass {"$fd": I} on with nobody owning its descriptor.
        Case(label: "a descriptor under a free-form object",
             json: ##"{"target": "T", "actions": [{"name": "a", "params": {"type": "object", "properties": {"o": {"properties": {"f": {"format": "fd"}}}}}}]}"##,
             mentions: ["actions[0].params.properties.o.properties.f.format", "free-form in generated code"]),
        Case(label: "a descriptor through a $ref under a value of several types",
             json: ##"{"target": "T", "actions": [{"name": "a", "result": {"type": ["object", "string"], "properties": {"f": {"$ref": "#/$defs/F"}}, "$defs": {"F": {"type": "object", "format": "fd"}}}}]}"##,
             mentions: ["actions[0].result.properties.f.$ref", "which holds a descriptor", "free-form in generated code"]),
        Case(label: "nested too deeply", json: deep, mentions: ["actions[0].params.items", "nested too deeply"]),
        Case(label: "not an object", json: ##"["Notes"]"##, mentions: ["must be a JSON object", "array"]),
        Case(label: "missing target", json: ##"{"actions": []}"##, mentions: ["target: is required"]),
        Case(label: "bad target name", json: ##"{"target": "1x", "actions": []}"##, mentions: ["target", "\"1x\""]),
        Case(label: "missing actions", json: ##"{"target": "T"}"##, mentions: ["actions: is required"]),
        Case(label: "action not a name or object", json: ##"{"target": "T", "actions": [3]}"##, mentions: ["actions[0]"]),
        Case(label: "action without name", json: ##"{"target": "T", "actions": [{}]}"##,
             mentions: ["actions[0].name: is required"]),
        Case(label: "duplicate action", json: ##"{"target": "T", "actions": ["a", {"name": "a"}]}"##,
             mentions: ["actions[1].name", "twice"]),
        Case(label: "more and oneway", json: ##"{"target": "T", "actions": [{"name": "a", "more": true, "oneway": true}]}"##,
             mentions: ["actions[0]", "more", "oneway"]),
        Case(label: "ref to nothing",
             json: ##"{"target": "T", "actions": [{"name": "a", "params": {"type": "object", "properties": {"n": {"$ref": "#/$defs/Missing"}}}}]}"##,
             mentions: ["actions[0].params.properties.n.$ref", "Missing", "refers to nothing"]),
        Case(label: "ref to another root's defs",
             json: ##"""
                {"target": "T", "actions": [
                  {"name": "a", "params": {"type": "object", "properties": {}, "$defs": {"P": {"type": "string"}}}},
                  {"name": "b", "result": {"$ref": "#/$defs/P"}}]}
                """##,
             mentions: ["actions[1].result.$ref", "refers to nothing"]),
        Case(label: "malformed ref", json: ##"{"target": "T", "actions": [{"name": "a", "result": {"$ref": "other.json#/x"}}]}"##,
             mentions: ["actions[0].result.$ref", "#/$defs/NAME"]),
        Case(label: "ref cycle",
             json: ##"{"target": "T", "actions": [{"name": "a", "result": {"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}}]}"##,
             mentions: ["cycle"]),
        Case(label: "conflicting defs",
             json: ##"""
                {"target": "T", "actions": [
                  {"name": "a", "params": {"$ref": "#/$defs/P", "$defs": {"P": {"type": "string"}}}},
                  {"name": "b", "result": {"$ref": "#/$defs/P", "$defs": {"P": {"type": "integer"}}}}]}
                """##,
             mentions: ["actions[1].result.$defs.P", "actions[0].params.$defs.P", "differs"]),
        Case(label: "schema not an object",
             json: ##"{"target": "T", "actions": [{"name": "a", "params": {"type": "object", "properties": {"x": 5}}}]}"##,
             mentions: ["actions[0].params.properties.x", "must be an object"]),
        Case(label: "unknown type name",
             json: ##"{"target": "T", "actions": [{"name": "a", "result": {"type": "object", "properties": {"x": {"type": "strin"}}}}]}"##,
             mentions: ["actions[0].result.properties.x.type", "strin"]),
    ]

    @Test(arguments: cases)
    func badInterfaceNamesTheMember(_ item: Case) throws {
        let interface = try JSONParser.parse(item.json)
        for language in ["swift", "python"] {
            let message: String
            do {
                _ = language == "swift"
                    ? try SwiftGenerator.generate(interface: interface, fileName: "T.mediator.json")
                    : try PythonGenerator.generate(interface: interface, fileName: "T.mediator.json")
                Issue.record("\(item.label): no error from the \(language) generator")
                continue
            } catch {
                message = error.description
            }
            for mention in item.mentions {
                #expect(message.contains(mention), "\(message) should mention \(mention)")
            }
            #expect(message == InterfaceProblems(InterfaceFile.check(json: interface, file: "T.mediator.json")).description)
        }
    }

    @Test func sharedDefinitionsGiveOneType() throws {
        let interface = try JSONParser.parse(##"""
            {"target": "T", "actions": [
              {"name": "a", "params": {"$ref": "#/$defs/P", "$defs": {"P": {"type": "object", "properties": {"x": {"type": "string"}}}}}},
              {"name": "b", "result": {"$ref": "#/$defs/P", "$defs": {"P": {"type": "object", "properties": {"x": {"type": "string"}}}}}}]}
            """##)
        let source = try SwiftGenerator.generate(interface: interface, fileName: "T.mediator.json")
        #expect(source.components(separatedBy: "public struct P:").count == 2)
        #expect(source.contains("public typealias AParams = P"))
        #expect(source.contains("public typealias BResult = P"))
    }
}
