import Foundation
import MediatorClient
import MediatorProtocol
import Testing

/// The generated `init(jsonValue:)`, `jsonValue` and `encodeJSON(into:)`
/// (JSONValueConvertible) must agree with the generated Codable forms
/// through Foundation's coders: same values accepted and refused, same JSON
/// written (`encodeJSON` the same bytes as `jsonValue`'s encoding). Checked on the
/// golden Shapes interface, which has every kind of member (required,
/// optional, nullable, both, nested, arrays of arrays, enums, free-form).
@Suite struct GeneratedConversionTests {
    static let valid: [String] = [
        #"{"both": null, "must_be_there": null, "scene": {"shapes": []}, "style": "fill"}"#,
        #"""
        {"anything": {"a": [1, 2.5, null]}, "both": ["x", null], "extra": 5, "level": "high", "matrix": [[1, 2.5], []],
         "maybe": true, "maybe-null": {"x": 3}, "meta": null, "mixed": "s", "must_be_there": 7,
         "scene": {"origin": {"x": 1, "y": -2.25}, "shapes": [{"kind": "3d", "label": {"size": 2, "text": "t"},
                   "points": [{"x": 0.5, "y": -1}]}, {"kind": "poly-line"}]},
         "style": "stroke", "unknown": {"ignored": true}}
        """#,
        #"{"both": [], "must_be_there": 0, "scene": {"origin": null, "shapes": []}, "style": "fill", "maybe-null": {}}"#,
    ]

    static let invalid: [String] = [
        #"[]"#,
        #"{"must_be_there": null, "scene": {"shapes": []}, "style": "fill"}"#,  // both missing
        #"{"both": null, "scene": {"shapes": []}, "style": "fill"}"#,  // must_be_there missing
        #"{"both": null, "must_be_there": null, "scene": {"shapes": []}, "style": "dots"}"#,
        #"{"both": null, "must_be_there": null, "scene": [], "style": "fill"}"#,
        #"{"both": null, "must_be_there": null, "scene": {"shapes": []}, "style": "fill", "matrix": [["a"]]}"#,
        #"{"both": null, "must_be_there": 1.5, "scene": {"shapes": []}, "style": "fill"}"#,
        #"{"both": null, "must_be_there": null, "scene": {"shapes": []}, "style": "fill", "maybe": "yes"}"#,
        #"{"both": null, "must_be_there": null, "scene": {"shapes": [{"label": {}}]}, "style": "fill"}"#,
        #"{"both": [1], "must_be_there": null, "scene": {"shapes": []}, "style": "fill"}"#,
        #"{"both": null, "must_be_there": null, "scene": {"shapes": null}, "style": "fill"}"#,
        #"{"both": null, "must_be_there": null, "scene": {"shapes": []}, "style": null}"#,
    ]

    static func viaCodable(_ text: String) -> DrawParams? {
        try? JSONDecoder().decode(DrawParams.self, from: Data(text.utf8))
    }

    @Test(arguments: valid)
    func validValuesConvertAsTheyDecode(text: String) throws {
        let json = try JSONParser.parse(text)
        let decoded = try #require(Self.viaCodable(text))
        let converted = try DrawParams(jsonValue: json)
        #expect(converted == decoded)
        #expect(converted.jsonValue == (try JSONParser.parse(try JSONEncoder().encode(decoded))))
        // encodeJSON writes, byte for byte, what jsonValue encodes to.
        var direct: [UInt8] = []
        converted.encodeJSON(into: &direct)
        #expect(String(decoding: direct, as: UTF8.self) == converted.jsonValue.jsonText)
    }

    @Test(arguments: invalid)
    func invalidValuesAreRefusedByBoth(text: String) throws {
        let json = try JSONParser.parse(text)
        #expect(Self.viaCodable(text) == nil)
        #expect(throws: JSONConversionError.self) { try DrawParams(jsonValue: json) }
    }

    @Test func theErrorSaysWhere() throws {
        let json = try JSONParser.parse(
            #"{"both": null, "must_be_there": null, "scene": {"shapes": [{"kind": "circle"}, {"kind": "hexagon"}]}, "style": "fill"}"#)
        do {
            _ = try DrawParams(jsonValue: json)
            Issue.record("accepted a bad kind")
        } catch {
            #expect(error.path == ["scene", "shapes", "1", "kind"])
            #expect(error.description == #"scene.shapes.1.kind: expected one of "circle", "square", "poly-line", "3d" (DrawParamsSceneShapesItemKind), found "hexagon""#)
        }
    }

    @Test func aliasesAndScalarsConvert() throws {
        #expect(try MeasureResult(jsonValue: 2) == 2.0)
        #expect(try ListAllResult(jsonValue: ["a", "b"]) == ["a", "b"])
        #expect(throws: JSONConversionError.self) { try ListAllResult(jsonValue: ["a", 1]) }
        #expect(try Int(jsonValue: .double(3)) == 3)
        #expect(throws: JSONConversionError.self) { try Int(jsonValue: .double(3.5)) }
        #expect(Point(x: 1, y: 0.5).jsonValue == ["x": 1, "y": .double(0.5)])
        #expect((-0.0).jsonValue == .double(-0.0))
    }

    /// Golden Recursive: types that lead back to themselves through object
    /// properties are stored out of line (`Indirect`) and still behave as
    /// values: compared, converted and coded member by member, and a copy
    /// changed leaves the original alone.
    @Test func recursiveTypesAreValues() throws {
        let text = #"{"value": 1, "next": {"value": 2, "next": {"value": 3}}}"#
        let list = try ListCell(jsonValue: try JSONParser.parse(text))
        #expect(list.next?.next?.value == 3 && list.next?.next?.next == nil)
        #expect(try JSONDecoder().decode(ListCell.self, from: Data(text.utf8)) == list)
        #expect(list.jsonValue == (try JSONParser.parse(text)))
        var direct: [UInt8] = []
        list.encodeJSON(into: &direct)
        #expect(String(decoding: direct, as: UTF8.self) == list.jsonValue.jsonText)
        var changed = list
        changed.next?.next?.value = 30
        #expect(list.next?.next?.value == 3 && changed.next?.next?.value == 30 && changed != list)

        let ping = Ping(label: "a", pong: Pong(ping: Ping(label: "b")))
        #expect(try Ping(jsonValue: ping.jsonValue) == ping)
        #expect(ping.jsonValue == ["label": "a", "pong": ["ping": ["label": "b"]]])
        let tree = TreeNode(children: [TreeNode()], meta: TreeNodeMeta(owner: TreeNode()), parent: TreeNode(children: []))
        #expect(try TreeNode(jsonValue: tree.jsonValue) == tree)
        let loop: MaybeLoop = MaybeLoopBody(again: MaybeLoopBody(again: nil))
        #expect(loop?.again?.again == nil)
        // A cycle through arrays alone: the closing reference is free-form.
        let nested: NestParams = try NestParams(jsonValue: [[[]], []])
        #expect(nested == [[[]], []])
        #expect(try Right(jsonValue: [[[1]]]) == [[[1]]])
    }

    @Test func scalarsEncodeDirectlyAsTheirJSONValue() {
        func same<T: JSONValueConvertible>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) {
            var direct: [UInt8] = []
            value.encodeJSON(into: &direct)
            #expect(String(decoding: direct, as: UTF8.self) == value.jsonValue.jsonText, sourceLocation: sourceLocation)
        }
        same(2.0)
        same(-0.0)
        same(0.5)
        same(1e300)
        same(Int.min)
        same(true)
        same("quote \" backslash \\ newline \n tab \t é \u{1}")
        same([[1, 2], [], [3]])
        same([String?.none, "x"])
        same(Int?.none)
        same(JSONValue.object(["b": 1, "a": [true, .null]]))
        same(DrawParamsSceneShapesItemKind.polyLine)
        same(Point(x: 1, y: -0.5))
    }
}
