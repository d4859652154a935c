import Foundation
import MediatorClient
import MediatorCodegen
import MediatorProtocol
import Testing

/// `anyOf`/`oneOf` in generated Swift (golden Alternatives interface): an
/// enum with a case per alternative; `anyOf` reads the first alternative
/// that reads the value (its bounds included), `oneOf` exactly one.
@Suite struct GeneratedAlternativesTests {
    static func value(_ text: String) throws -> SetParamsValue {
        try SetParamsValue(jsonValue: try JSONParser.parse(text))
    }

    @Test func anyOfTakesTheFirstAlternativeThatReads() throws {
        #expect(try Self.value(#""short""#) == .string("short"))
        #expect(try Self.value("5") == .integer(5))
        #expect(try Self.value("5.5") == .number(5.5))
        #expect(try Self.value("null") == .null)
        // Longer than the string alternative's maxLength, and no other alternative reads a string.
        #expect(throws: JSONConversionError.self) { try Self.value(#""far too long""#) }
        #expect(throws: JSONConversionError.self) { try Self.value("true") }
        for value in [SetParamsValue.string("a"), .integer(-3), .number(0.25), .null] {
            #expect(try SetParamsValue(jsonValue: value.jsonValue) == value)
            var text: [UInt8] = []
            value.encodeJSON(into: &text)
            #expect(String(decoding: text, as: UTF8.self) == value.jsonValue.jsonText)
        }
    }

    @Test func oneOfNeedsExactlyOneAlternative() throws {
        #expect(try Shape(jsonValue: ["radius": 1]) == .circle(Circle(radius: 1)))
        #expect(try Shape(jsonValue: "dot") == .shapeOption3(.dot))
        // Both objects read it (generated types ignore members they do not know).
        do {
            _ = try Shape(jsonValue: ["radius": 1, "side": 2])
            Issue.record("two alternatives read it, yet it passed")
        } catch {
            #expect(error.description.contains("exactly one of Circle, Square, ShapeOption3 (Shape), found 2 of them"))
        }
        // The circle's bound refuses it, and nothing else reads it.
        #expect(throws: JSONConversionError.self) { try Shape(jsonValue: ["radius": -1]) }
        #expect(try SetResult(jsonValue: 3) == .integer(3))
        #expect(try SetResult(jsonValue: ["ok": true]) == .setResultOption1(SetResultOption1(ok: true)))
        #expect(throws: JSONConversionError.self) { try SetResult(jsonValue: -1) }
    }

    @Test func codableAgreesAndValidateChecksTheAlternativesBounds() throws {
        let text = #"{"key": "k", "value": 7, "shape": {"side": 2}, "tags": ["a", ["b", "c"]]}"#
        let converted = try SetParams(jsonValue: try JSONParser.parse(text))
        #expect(converted == (try JSONDecoder().decode(SetParams.self, from: Data(text.utf8))))
        #expect(converted.tags == [.string("a"), .array(["b", "c"])])
        #expect(try JSONParser.parse(try JSONEncoder().encode(converted)) == converted.jsonValue)
        try converted.validate()
        let outOfBounds = SetParams(key: "k", shape: .circle(Circle(radius: -2)), value: .string("123456789"))
        do {
            try outOfBounds.validate()
            Issue.record("out of bounds, yet valid")
        } catch {
            #expect(error.path == ["shape", "radius"])
        }
        #expect(throws: JSONConversionError.self) { try SetParams(key: "k", value: .string("123456789")).validate() }
    }

    static let nested: [(label: String, schema: String)] = [
        ("a union in a union", #"{"anyOf": [{"oneOf": [{"type": "string"}]}, {"type": "integer"}]}"#),
        ("a union in an alternative's member",
         #"{"oneOf": [{"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}]}}}, {"type": "integer"}]}"#),
        ("a union that leads back to itself",
         ##"{"$ref": "#/$defs/T", "$defs": {"T": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/T"}}, {"type": "string"}]}}}"##),
    ]

    @Test(arguments: nested.map(\.label))
    func nestedAlternativesAreRefusedByGeneration(label: String) throws {
        let schema = try #require(Self.nested.first { $0.label == label }).schema
        let interface = try JSONParser.parse(#"{"target": "T", "actions": [{"name": "a", "result": \#(schema)}]}"#)
        #expect(throws: CodegenError.self) { try SwiftGenerator.generate(interface: interface, fileName: "t.json") }
        do {
            _ = try PythonGenerator.generate(interface: interface, fileName: "t.json")
            Issue.record("\(label): generated")
        } catch {
            #expect(error.reason.contains("leads to another anyOf/oneOf"), "\(error)")
        }
    }
}
