import Testing

@testable import MediatorProtocol

@Suite struct ActionSpecTests {
    @Test func bareName() throws {
        let spec = try ActionSpec(json: "show")
        #expect(spec == ActionSpec(name: "show"))
        #expect(spec.description == nil)
        #expect(spec.params == nil)
        #expect(spec.result == nil)
        #expect(spec.url == nil)
        #expect(spec.json == ["name": "show"])
    }

    @Test func bareNameEqualsObjectWithOnlyName() throws {
        let bare = try ActionSpec(json: "show")
        let object = try ActionSpec(json: ["name": "show"])
        #expect(bare == object)
        #expect(bare.hashValue == object.hashValue)
    }

    @Test func fullObject() throws {
        let json: JSONValue = [
            "name": "show",
            "description": "Show a detail view",
            "params": ["type": "object", "properties": ["title": ["type": "string"]], "required": ["title"]],
            "result": ["type": "object"],
            "url": true,
        ]
        let spec = try ActionSpec(json: json)
        #expect(spec.name == "show")
        #expect(spec.description == "Show a detail view")
        #expect(spec.params?.required == ["title"])
        #expect(spec.result?.types == ["object"])
        #expect(spec.url == true)
        #expect(spec.json == json)
        #expect(try ActionSpec(json: spec.json) == spec)
        #expect(spec.params?.validate(["title": 1])?.message == "params.title: expected string, got integer")
    }

    @Test func unknownMembersAndNullsAreIgnored() throws {
        let spec = try ActionSpec(json: ["name": "show", "future": [1, 2], "description": nil, "params": nil, "url": nil])
        #expect(spec == ActionSpec(name: "show"))
        #expect(spec.json == ["name": "show"])
    }

    @Test func jsonOmitsAbsentMembers() throws {
        let spec = ActionSpec(name: "a", url: false)
        #expect(spec.json == ["name": "a", "url": false])
        let withSchema = ActionSpec(name: "a", params: try Schema(json: ["type": "object"]))
        #expect(withSchema.json == ["name": "a", "params": ["type": "object"]])
    }

    @Test func specsWithDifferentSchemasDiffer() throws {
        let a = try ActionSpec(json: ["name": "a", "params": ["type": "object"]])
        let b = try ActionSpec(json: ["name": "a", "params": ["type": "array"]])
        #expect(a != b)
        #expect(a != ActionSpec(name: "a"))
    }

    @Test func moreAndOnewayAreReadAndEchoed() throws {
        let stream = try ActionSpec(json: ["name": "watch", "more": true, "result": ["type": "object"]])
        #expect(stream.more == true)
        #expect(stream.oneway == nil)
        #expect(stream.json == ["name": "watch", "more": true, "result": ["type": "object"]])
        #expect(try ActionSpec(json: stream.json) == stream)

        let touch = try ActionSpec(json: ["name": "touch", "oneway": true, "more": false])
        #expect(touch.oneway == true)
        #expect(touch.more == false)
        #expect(touch.json == ["name": "touch", "oneway": true, "more": false])

        let plain = try ActionSpec(json: ["name": "a", "more": nil, "oneway": nil])
        #expect(plain == ActionSpec(name: "a"))
        #expect(plain.json == ["name": "a"])
        #expect(ActionSpec(name: "a", more: true).json == ["name": "a", "more": true])
    }

    @Test func poolComparisonSeesMoreAndOneway() throws {
        let a = try ActionSpec(json: ["name": "w", "more": true])
        #expect(a == (try ActionSpec(json: ["more": true, "name": "w"])))
        #expect(a != ActionSpec(name: "w"))
        #expect(a != (try ActionSpec(json: ["name": "w", "oneway": true])))
    }

    static let invalid: [(JSONValue, String)] = [
        ("", "invalid action name \"\""),
        ("9show", "invalid action name \"9show\""),
        ("sh ow", "invalid action name"),
        (.string(String(repeating: "a", count: 129)), "invalid action name"),
        (["name": "bad name"], "invalid action name \"bad name\""),
        ([:], "action spec: missing member \"name\""),
        (["description": "x"], "action spec: missing member \"name\""),
        (["name": 3], "action spec: \"name\" must be a string, got integer"),
        (["name": nil], "action spec: \"name\" must be a string, got null"),
        (["name": "show", "description": 1], "action \"show\": \"description\" must be a string, got integer"),
        (["name": "show", "url": "yes"], "action \"show\": \"url\" must be a boolean, got string"),
        (["name": "show", "url": 1], "action \"show\": \"url\" must be a boolean, got integer"),
        (["name": "w", "more": "yes"], "action \"w\": \"more\" must be a boolean, got string"),
        (["name": "w", "oneway": 1], "action \"w\": \"oneway\" must be a boolean, got integer"),
        (["name": "w", "more": true, "oneway": true], "action \"w\": \"more\" and \"oneway\" cannot both be true"),
        (["name": "w", "result": ["items": ["$ref": "#/$defs/X"]]],
         "action \"w\": result.items.$ref: no definition \"X\" in the root schema's \"$defs\""),
        (["name": "show", "params": "object"], "action \"show\": params: a schema must be an object, got string"),
        (["name": "show", "params": ["type": "strin"]], "action \"show\": params.type: unknown type name \"strin\""),
        (["name": "show", "result": ["required": "x"]], "action \"show\": result.required: must be an array of strings"),
        (3, "an action spec must be an action name or an object, got integer"),
        (["show"], "an action spec must be an action name or an object, got array"),
        (nil, "an action spec must be an action name or an object, got null"),
    ]

    @Test(arguments: invalid)
    func rejects(json: JSONValue, messagePrefix: String) {
        #expect {
            try ActionSpec(json: json)
        } throws: { error in
            guard let error = error as? MediatorError else { return false }
            return error.code == .badRequest && error.message.hasPrefix(messagePrefix)
        }
    }

    @Test func acceptsNameAtBoundary() throws {
        let name = "_" + String(repeating: "a", count: 127)
        #expect(try ActionSpec(json: .string(name)).name == name)
    }

    @Test(arguments: [
        ("show", nil, true),
        ("show", true, true),
        ("show", false, false),
        ("native", nil, false),
        ("nativeOpen", nil, false),
        ("native.open", true, false),
        ("native_x", false, false),
        ("Native", nil, true),
        ("nativ", nil, true),
        ("_native", nil, true),
        ("openNative", nil, true),
    ] as [(String, Bool?, Bool)])
    func urlGuard(name: String, url: Bool?, reachable: Bool) {
        #expect(ActionSpec(name: name, url: url).reachableByURL == reachable)
    }
}
