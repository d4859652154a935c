import MediatorProtocol
import Testing

@testable import mediatorctl

/// `key=value` words typed by the action's declared `params` schema.
@Suite struct ParamsTypingTests {
    /// An action's params schema with these members.
    static func schema(_ properties: [String: JSONValue], definitions: [String: JSONValue]? = nil) throws -> Schema {
        var json: [String: JSONValue] = ["type": "object", "properties": .object(properties)]
        if let definitions { json["$defs"] = .object(definitions) }
        return try Schema(json: .object(json))
    }

    @Test("A string member takes the text verbatim, even when it reads as JSON")
    func stringMember() throws {
        let schema = try Self.schema(["key": ["type": "string"], "value": ["type": "string"]])
        #expect(try ParamsParser.params(["key=a", "value=1"], schema: schema) == ["key": "a", "value": "1"])
        #expect(try ParamsParser.params(["value=true", "key=null"], schema: schema) == ["key": "null", "value": "true"])
        #expect(try ParamsParser.params([#"value="q""#, "key={}"], schema: schema) == ["key": "{}", "value": #""q""#])
        #expect(try ParamsParser.params(["value="], schema: schema) == ["value": ""])
    }

    @Test("An enum of strings is a string; an enum of numbers takes numbers")
    func enumMember() throws {
        let schema = try Self.schema(["level": ["enum": ["1", "2"]], "n": ["enum": [1, 2]]])
        #expect(try ParamsParser.params(["level=1", "n=2"], schema: schema) == ["level": "1", "n": 2])
        #expect(throws: ParamsParser.Failure(#"n: expected integer, got "x""#)) {
            try ParamsParser.params(["n=x"], schema: schema)
        }
    }

    @Test("integer, number, boolean and null parse as that type, else a failure naming the key and the type")
    func scalarMembers() throws {
        let schema = try Self.schema([
            "days": ["type": "integer"], "f": ["type": "number"], "ok": ["type": "boolean"], "none": ["type": "null"],
        ])
        #expect(try ParamsParser.params(["days=2", "f=1", "ok=false", "none=null"], schema: schema)
                == ["days": 2, "f": 1, "ok": false, "none": .null])
        #expect(try ParamsParser.params(["f=1.5"], schema: schema) == ["f": 1.5])
        for (word, message) in [
            ("days=two", #"days: expected integer, got "two""#), ("days=1.5", #"days: expected integer, got "1.5""#),
            ("days=", #"days: expected integer, got """#), ("ok=yes", #"ok: expected boolean, got "yes""#),
            ("f=\"1\"", #"f: expected number, got ""1"""#), ("none=0", #"none: expected null, got "0""#),
        ] {
            #expect(throws: ParamsParser.Failure(message), "\(word)") { try ParamsParser.params([word], schema: schema) }
        }
    }

    @Test("object and array members take JSON of that type")
    func structuredMembers() throws {
        let schema = try Self.schema(["tags": ["type": "array"], "meta": ["type": "object"]])
        #expect(try ParamsParser.params([#"tags=["a"]"#, #"meta={"k":1}"#], schema: schema)
                == ["tags": ["a"], "meta": ["k": 1]])
        #expect(throws: ParamsParser.Failure(#"tags: expected array, got "a,b""#)) {
            try ParamsParser.params(["tags=a,b"], schema: schema)
        }
        #expect(throws: ParamsParser.Failure(#"meta: expected object, got "[]""#)) {
            try ParamsParser.params(["meta=[]"], schema: schema)
        }
    }

    @Test("A union takes JSON of a non-string type when the text reads as one, else the string")
    func unionMembers() throws {
        let schema = try Self.schema([
            "note": ["type": ["string", "null"]], "id": ["type": ["integer", "string"]],
            "limit": ["type": ["integer", "null"]],
        ])
        #expect(try ParamsParser.params(["note=null", "id=7", "limit=null"], schema: schema)
                == ["note": .null, "id": 7, "limit": .null])
        #expect(try ParamsParser.params(["note=1", "id=x7", "limit=3"], schema: schema)
                == ["note": "1", "id": "x7", "limit": 3])
        #expect(throws: ParamsParser.Failure(#"limit: expected integer or null, got "many""#)) {
            try ParamsParser.params(["limit=many"], schema: schema)
        }
    }

    @Test("$ref is followed, for the params and for a member")
    func references() throws {
        let schema = try Schema(json: [
            "$ref": "#/$defs/Params",
            "$defs": [
                "Params": ["type": "object", "properties": ["name": ["$ref": "#/$defs/Name"], "n": ["type": "integer"]]],
                "Name": ["type": "string"],
            ],
        ])
        #expect(try ParamsParser.params(["name=42", "n=42"], schema: schema) == ["name": "42", "n": 42])
    }

    @Test("Without a schema, an undeclared member or a member without type or enum, the value is guessed")
    func guesses() throws {
        let schema = try Self.schema(["free": ["description": "anything"]])
        #expect(try ParamsParser.params(["free=1", "other=true", "s=x"], schema: schema)
                == ["free": 1, "other": true, "s": "x"])
        #expect(try ParamsParser.params(["free=1", "s=x"], schema: nil) == ["free": 1, "s": "x"])
    }

    @Test("key:=json forces JSON, with or without a schema")
    func forcedJSON() throws {
        let schema = try Self.schema(["value": ["type": "string"]])
        #expect(try ParamsParser.params(["value:=1", "n:=[1]"], schema: schema) == ["value": 1, "n": [1]])
        #expect(try ParamsParser.params([#"s:="5""#]) == ["s": "5"])
        #expect(throws: ParamsParser.Failure.self) { try ParamsParser.params(["n:=abc"]) }
        #expect(throws: ParamsParser.Failure(#"empty key in ":=1""#)) { try ParamsParser.params([":=1"]) }
    }

    @Test("Only key=value words are typed from a schema")
    func keyValueWords() {
        #expect(ParamsParser.isKeyValue(["a=1"]))
        #expect(!ParamsParser.isKeyValue([]))
        #expect(!ParamsParser.isKeyValue([#"{"a": 1}"#]))
    }
}
