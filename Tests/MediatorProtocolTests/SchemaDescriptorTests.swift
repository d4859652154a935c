import Testing

@testable import MediatorProtocol

/// `"format": "fd"` (issue 26): a member that is a descriptor sent with the
/// message, `{"$fd": I}` with I below the message's `fds`. Before, `format`
/// was an ignored annotation, so every refused value here was let through.
@Suite struct SchemaDescriptorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let label: String
        let schema: JSONValue
        let value: JSONValue
        let fds: Int
        let message: String?
        var testDescription: String { label }

        init(_ label: String, _ schema: JSONValue, _ value: JSONValue, fds: Int, _ message: String?) {
            self.label = label
            self.schema = schema
            self.value = value
            self.fds = fds
            self.message = message
        }
    }

    static let file: JSONValue = ["type": "object", "format": "fd"]
    static let withFile: JSONValue = ["type": "object", "properties": ["file": file], "required": ["file"]]

    static let cases: [Case] = [
        Case("index 0 of 1", withFile, ["file": ["$fd": 0]], fds: 1, nil),
        Case("last index", withFile, ["file": ["$fd": 2]], fds: 3, nil),
        Case("integral double", withFile, ["file": ["$fd": 1.0]], fds: 2, nil),
        Case("no fds", withFile, ["file": ["$fd": 0]], fds: 0,
             "params.file: {\"$fd\": 0} refers to no descriptor: the message has no \"fds\""),
        Case("index out of range", withFile, ["file": ["$fd": 1]], fds: 1,
             "params.file: {\"$fd\": 1} is out of range: the message has \"fds\": 1, so 0 to 0"),
        Case("negative index", withFile, ["file": ["$fd": -1]], fds: 1,
             "params.file: {\"$fd\": -1} is out of range: the message has \"fds\": 1, so 0 to 0"),
        Case("index not an integer", withFile, ["file": ["$fd": "0"]], fds: 1,
             "params.file: expected a descriptor, {\"$fd\": I} with I an integer and no other member; got another object"),
        Case("fractional index", withFile, ["file": ["$fd": 0.5]], fds: 1,
             "params.file: expected a descriptor, {\"$fd\": I} with I an integer and no other member; got another object"),
        Case("another member", withFile, ["file": ["$fd": 0, "x": 1]], fds: 1,
             "params.file: expected a descriptor, {\"$fd\": I} with I an integer and no other member; got another object"),
        Case("empty object", withFile, ["file": [:]], fds: 1,
             "params.file: expected a descriptor, {\"$fd\": I} with I an integer and no other member; got another object"),
        Case("a number", withFile, ["file": 0], fds: 1,
             "params.file: expected object, got integer"),
        Case("no type: a string", ["properties": ["file": ["format": "fd"]]], ["file": "/etc/passwd"], fds: 1,
             "params.file: expected a descriptor, {\"$fd\": I} with I an integer and no other member; got string"),
        Case("no type: null", ["properties": ["file": ["format": "fd"]]], ["file": nil], fds: 0,
             "params.file: expected a descriptor, {\"$fd\": I} with I an integer and no other member; got null"),
        Case("nullable null", ["properties": ["file": ["type": ["object", "null"], "format": "fd"]]], ["file": nil], fds: 0, nil),
        Case("missing required", withFile, [:], fds: 1, "params: missing required member \"file\""),
        Case("in items", ["type": "array", "items": file], [["$fd": 0], ["$fd": 2]], fds: 2,
             "params[1]: {\"$fd\": 2} is out of range: the message has \"fds\": 2, so 0 to 1"),
        Case("same index twice", ["type": "array", "items": file], [["$fd": 0], ["$fd": 0]], fds: 1, nil),
        Case("through $ref", ["properties": ["f": ["$ref": "#/$defs/File"]], "$defs": ["File": file]], ["f": ["$fd": 3]], fds: 1,
             "params.f: {\"$fd\": 3} is out of range: the message has \"fds\": 1, so 0 to 0"),
        Case("at the root", file, ["$fd": 0], fds: 1, nil),
        Case("other formats are annotations", ["type": "string", "format": "date-time"], "x", fds: 0, nil),
    ]

    @Test(arguments: cases)
    func validates(_ example: Case) throws {
        let error = try Schema(json: example.schema).validate(example.value, fds: example.fds)
        if let message = example.message {
            #expect(error?.code == .invalidParams)
            #expect(error?.message == message)
        } else {
            #expect(error == nil)
        }
    }

    @Test func resultPathIsNamed() throws {
        let error = try Schema(json: Self.withFile).validate(["file": ["$fd": 0]], path: "result")
        #expect(error?.message == "result.file: {\"$fd\": 0} refers to no descriptor: the message has no \"fds\"")
    }

    @Test func isDescriptorIsRead() throws {
        #expect(try Schema(json: Self.file).isDescriptor)
        #expect(try Schema(json: ["format": "fd"]).isDescriptor)
        #expect(try !Schema(json: ["type": "object", "format": "uri"]).isDescriptor)
        #expect(try Schema(json: Self.withFile).properties["file"]?.isDescriptor == true)
    }

    static let malformed: [(JSONValue, String)] = [
        (["type": "string", "format": "fd"],
         "schema.type: a descriptor (\"format\": \"fd\") is the object {\"$fd\": I}: \"type\" must be \"object\" (or [\"object\", \"null\"])"),
        (["properties": ["f": ["type": ["object", "array"], "format": "fd"]]],
         "schema.properties.f.type: a descriptor (\"format\": \"fd\") is the object {\"$fd\": I}: \"type\" must be \"object\" (or [\"object\", \"null\"])"),
        (["type": "null", "format": "fd"],
         "schema.type: a descriptor (\"format\": \"fd\") is the object {\"$fd\": I}: \"type\" must be \"object\" (or [\"object\", \"null\"])"),
    ]

    @Test(arguments: malformed)
    func rejectsMalformed(json: JSONValue, message: String) { expectRefusal(json, message: message) }
}
