import MediatorProtocol
import Testing

@testable import mediatorctl

/// The compact notation `mediatorctl describe` shows schemas in.
@Suite struct SchemaNotationTests {
    static let cases: [(schema: String, text: String)] = [
        (#"{}"#, "any"),
        (#"true"#, "any"),
        (#"false"#, "never"),
        (#"{"type":"string"}"#, "string"),
        (#"{"type":["string","null"]}"#, "string | null"),
        (#"{"type":"integer","minimum":1,"maximum":14}"#, "integer 1…14"),
        (#"{"type":"integer","minimum":1,"maximum":14,"default":7}"#, "integer 1…14 = 7"),
        (#"{"type":"number","minimum":0.5}"#, "number ≥0.5"),
        (#"{"type":"number","maximum":100.0}"#, "number ≤100"),
        (#"{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}"#, "number >0 <1"),
        (#"{"type":"string","minLength":1,"maxLength":64}"#, "string 1…64 chars"),
        (#"{"type":"string","minLength":2,"maxLength":2}"#, "string 2 chars"),
        (#"{"type":"string","maxLength":64,"minimum":3}"#, "string ≤64 chars"),
        (#"{"type":"array","items":{"type":"string"},"minItems":1}"#, "[string] ≥1 items"),
        (#"{"type":"array","maxItems":5}"#, "array ≤5 items"),
        (#"{"items":{"type":"integer"}}"#, "[integer]"),
        (#"{"type":"string","enum":["plain","todo"]}"#, #""plain" | "todo""#),
        (#"{"enum":[1,null,true]}"#, "1 | null | true"),
        (#"{"const":"v1"}"#, #""v1""#),
        (#"{"type":"boolean","default":false}"#, "boolean = false"),
        (#"{"anyOf":[{"type":"string"},{"type":"integer","minimum":0}]}"#, "string | integer ≥0"),
        (##"{"oneOf":[{"type":"string"},{"$ref":"#/$defs/Note"}]}"##, "oneOf(string, Note)"),
        (##"{"$ref":"#/$defs/Note"}"##, "Note"),
        (#"{"type":"object"}"#, "object"),
        (#"{"type":"object","additionalProperties":false}"#, "{}"),
        (#"{"type":"object","additionalProperties":{"type":"integer"}}"#, "{*: integer}"),
        (
            #"{"type":"object","required":["text","id"],"properties":{"text":{"type":"string"},"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"due":{"type":["string","null"]}}}"#,
            "{text: string, id: integer, due?: string | null, tags?: [string]}"
        ),
        (
            #"{"type":"object","required":["missing"],"properties":{"a":{"type":"object","properties":{"b":{}}}}}"#,
            "{a?: {b?: any}}"
        ),
        (#"{"properties":{"odd name":{"type":"string"}}}"#, #"{"odd name"?: string}"#),
        (#"{"type":["object","null"],"properties":{"a":{"type":"integer"}}}"#, "{a?: integer} | null"),
        (#"{"type":"string","description":"ignored","format":"date"}"#, "string"),
        // What a peer wrote is escaped, as everywhere mediatorctl prints for people.
        (#"{"enum":["a\u001b[31m"]}"#, #""a\\u001b[31m""#),
        (#"{"properties":{"x\u202e":{"type":"string"}}}"#, #"{"x\u202e"?: string}"#),
    ]

    @Test(arguments: cases)
    func notation(schema: String, text: String) throws {
        #expect(SchemaNotation.text(try JSONParser.parse(schema)) == text)
    }
}

/// What `mediatorctl describe` prints for people.
@Suite struct InterfaceTextTests {
    static let notes: JSONValue = [
        "target": "Notes", "description": "Keeps short notes", "mode": "exclusive", "state": "running",
        "instances": [["instance": 1, "pid": 4242, "uid": 1000, "gid": 1000]],
        "actions": [
            [
                "name": "add", "description": "Add a note",
                "params": [
                    "type": "object", "required": ["text"],
                    "properties": ["text": ["type": "string"], "tags": ["type": "array", "items": ["type": "string"]]],
                ],
                "result": ["type": "object", "required": ["id"], "properties": ["id": ["type": "integer"]]],
            ],
            [
                "name": "list", "params": ["type": "object", "additionalProperties": false],
                "result": [
                    "type": "object", "required": ["notes"],
                    "properties": ["notes": ["type": "array", "items": ["$ref": "#/$defs/Note"]]],
                    "$defs": [
                        "Note": [
                            "type": "object", "required": ["id", "text"],
                            "properties": ["id": ["type": "integer"], "text": ["type": "string"]],
                        ]
                    ],
                ],
            ],
            ["name": "watch", "more": true, "result": ["type": "object"]],
            ["name": "touch", "oneway": true],
            "bare",
        ],
    ]

    @Test func aTargetReadsAsSignatures() {
        #expect(InterfaceText.render(Self.notes, width: nil) == """
            Notes - Keeps short notes
            State: running, exclusive, PID(s) 4242

            Actions:
              add(text: string, tags?: [string]) -> {id: integer}
                  Add a note
              list() -> {notes: [Note]}
                  Note = {id: integer, text: string}
              watch(...) -> object [stream]
              touch(...) [oneway]
              bare(...)

            """)
    }

    @Test func aLongSignatureIsBrokenOverLinesAtTheWidth() {
        let spec: JSONValue = [
            "name": "forecast",
            "params": [
                "type": "object", "required": ["city"],
                "properties": [
                    "city": ["type": "string", "minLength": 1],
                    "days": ["type": "integer", "minimum": 1, "maximum": 14, "default": 7],
                ],
            ],
            "result": [
                "type": "object", "required": ["city", "days"],
                "properties": [
                    "city": ["type": "string"],
                    "days": [
                        "type": "array",
                        "items": [
                            "type": "object", "required": ["high", "low"],
                            "properties": ["high": ["type": "number"], "low": ["type": "number"]],
                        ],
                    ],
                ],
            ],
        ]
        #expect(InterfaceText.action(spec, width: 200) == """
              forecast(city: string ≥1 chars, days?: integer 1…14 = 7) -> {city: string, days: [{high: number, low: number}]}

            """)
        let broken = InterfaceText.action(spec, width: 60)
        #expect(broken == """
              forecast(
                  city: string ≥1 chars,
                  days?: integer 1…14 = 7
              ) -> {city: string, days: [{high: number, low: number}]}

            """)
        #expect(broken.split(separator: "\n").allSatisfy { $0.count <= 60 }, "\(broken)")
        let narrow = InterfaceText.action(spec, width: 30)
        #expect(narrow == """
              forecast(
                  city: string ≥1 chars,
                  days?: integer 1…14 = 7
              ) -> {
                  city: string,
                  days: [{
                      high: number,
                      low: number
                  }]
              }

            """)
    }

    @Test func paramsThatAreNotAnObjectOfMembersReadAsATypeInParentheses() {
        #expect(TextLayout.inline(InterfaceText.params(nil)) == "(...)")
        #expect(TextLayout.inline(InterfaceText.params(["type": "object"])) == "(...)")
        #expect(TextLayout.inline(InterfaceText.params(["type": "object", "additionalProperties": false])) == "()")
        #expect(TextLayout.inline(InterfaceText.params(["$ref": "#/$defs/Query"])) == "(Query)")
        #expect(TextLayout.inline(InterfaceText.params(["additionalProperties": ["type": "string"]])) == "(*: string)")
    }

    @Test func theDaemonsOwnTargetHasNoStateLine() {
        let daemon: JSONValue = ["target": "mediator", "description": "The daemon itself", "actions": ["ping"], "instances": []]
        #expect(InterfaceText.render(daemon, width: nil) == "mediator - The daemon itself\n\nActions:\n  ping(...)\n")
        let activatable: JSONValue = ["target": "W", "state": "activatable", "actions": [], "instances": []]
        #expect(InterfaceText.render(activatable, width: nil) == "W\nState: activatable, PID(s) -\n\nActions:\n  (none)\n")
    }

    @Test func aDescriptionIsEscapedAndCutToTheWidth() {
        let target: JSONValue = [
            "target": "T", "description": "evil\u{1b}]0;x\u{07}", "actions": [["name": "a", "description": .string(String(repeating: "d", count: 100))]],
        ]
        let text = InterfaceText.render(target, width: 40)
        #expect(text.hasPrefix("T - evil\\x1b]0;x\\x07\n"), "\(text)")
        #expect(text.contains("      " + String(repeating: "d", count: 33) + "…\n"), "\(text)")
    }
}
