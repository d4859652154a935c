import Testing

@testable import MediatorProtocol

@Suite struct JSONParserTests {
    // MARK: - Literals and containers

    @Test(arguments: [
        ("null", JSONValue.null),
        ("true", .bool(true)),
        ("false", .bool(false)),
        ("0", .int(0)),
        ("\"\"", .string("")),
        ("[]", .array([])),
        ("{}", .object([:])),
        ("[1,\"a\",null,true,false,{}]", .array([.int(1), .string("a"), .null, .bool(true), .bool(false), .object([:])])),
        ("{\"a\":{\"b\":[1,{\"c\":null}]}}", .object(["a": .object(["b": .array([.int(1), .object(["c": .null])])])])),
        (" \t\r\n{ \"a\" : [ 1 , 2 ] }\n\r\t ", .object(["a": .array([.int(1), .int(2)])])),
        ("[ ]", .array([])),
        ("{ }", .object([:])),
    ])
    func parsesValues(text: String, expected: JSONValue) throws {
        #expect(try JSONParser.parse(text) == expected)
        // The byte overloads agree with the String one.
        #expect(try JSONParser.parse(Array(text.utf8)) == expected)
        let viaBuffer = try Array(text.utf8).withUnsafeBytes { buffer throws(JSONParseError) in
            try JSONParser.parse(buffer)
        }
        #expect(viaBuffer == expected)
    }

    @Test func duplicateMemberNamesLastWins() throws {
        #expect(try JSONParser.parse(#"{"a":1,"b":2,"a":3}"#) == .object(["a": .int(3), "b": .int(2)]))
        #expect(try JSONParser.parse(#"{"a":{"x":1},"a":"y"}"#) == .object(["a": .string("y")]))
    }

    // MARK: - Numbers

    @Test(arguments: [
        ("0", JSONValue.int(0)),
        ("-0", .int(0)),
        ("7", .int(7)),
        ("-7", .int(-7)),
        ("9223372036854775807", .int(Int64.max)),
        ("-9223372036854775808", .int(Int64.min)),
        ("9223372036854775808", .double(9_223_372_036_854_775_808.0)),
        ("-9223372036854775809", .double(-9_223_372_036_854_775_809.0)),
        ("100000000000000000000000", .double(1e23)),
        ("1.5", .double(1.5)),
        ("-0.0", .double(-0.0)),
        ("5000.0", .double(5000)),
        ("1e3", .double(1000)),
        ("1E3", .double(1000)),
        ("1e+3", .double(1000)),
        ("1e-3", .double(0.001)),
        ("-2.5E-2", .double(-0.025)),
        ("0.1", .double(0.1)),
        ("1e07", .double(1e7)),
        ("1.7976931348623157e308", .double(Double.greatestFiniteMagnitude)),
        ("5e-324", .double(Double.leastNonzeroMagnitude)),
    ])
    func numbers(text: String, expected: JSONValue) throws {
        let value = try JSONParser.parse(text)
        #expect(value == expected)
    }

    @Test func negativeZeroDoubleKeepsItsSign() throws {
        guard case .double(let number) = try JSONParser.parse("-0.0") else {
            Issue.record("-0.0 is not a double")
            return
        }
        #expect(number == 0)
        #expect(number.sign == .minus)
        // An integer -0 is just 0.
        #expect(try JSONParser.parse("-0") == .int(0))
    }

    @Test(arguments: [
        "-", "+1", ".5", "1.", "1.e3", "01", "-01", "00", "1e", "1e+", "1E-", "0x10", "1_000",
        "NaN", "Infinity", "-Infinity", "--1", "1..2", "1e3.5", "- 1",
    ])
    func badNumbers(text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    // MARK: - Strings

    @Test(arguments: [
        (#""abc""#, "abc"),
        (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{08}\u{0C}\n\r\t"),
        (#""\u0041\u00e9\u4E2D""#, "Aé中"),
        (#""\u0000""#, "\u{0}"),
        (#""\u001f""#, "\u{1F}"),
        (#""\ud83d\ude00""#, "😀"),
        (#""\uD834\uDD1E""#, "𝄞"),
        (#""x\uD83D\uDE00y""#, "x😀y"),
        (#""\uFFFF""#, "\u{FFFF}"),
        ("\"é中😀\"", "é中😀"),
        ("\"a\u{7F}b\"", "a\u{7F}b"),
        (#""a\u0022b""#, "a\"b"),
        (#""before\nafter é""#, "before\nafter é"),
        ("\"\u{2028}\u{2029}\"", "\u{2028}\u{2029}"),
    ])
    func strings(text: String, expected: String) throws {
        #expect(try JSONParser.parse(text) == .string(expected))
        // The same string as a member name.
        #expect(try JSONParser.parse("{" + text + ":1}") == .object([expected: .int(1)]))
    }

    static let badStringCases: [(String, [UInt8])] = [
        ("unterminated", Array(#""abc"#.utf8)),
        ("unterminated after escape", Array(#""abc\"#.utf8)),
        ("unterminated after escaped quote", Array(#""abc\""#.utf8)),
        ("raw LF", Array("\"a\nb\"".utf8)),
        ("raw tab", Array("\"a\tb\"".utf8)),
        ("raw NUL", [0x22, 0x61, 0x00, 0x22]),
        ("raw 0x1F", [0x22, 0x1F, 0x22]),
        ("control after escape", Array("\"\\n\u{01}\"".utf8)),
        ("invalid escape", Array(#""\x""#.utf8)),
        ("escaped apostrophe", Array(#""\'""#.utf8)),
        ("short \\u", Array(#""\u12""#.utf8)),
        ("bad hex", Array(#""\u12G4""#.utf8)),
        ("lone high surrogate", Array(#""\uD800""#.utf8)),
        ("lone high surrogate then text", Array(#""\uD800abcdef""#.utf8)),
        ("lone low surrogate", Array(#""\uDC00""#.utf8)),
        ("high then non-low", Array(#""\uD800\u0041""#.utf8)),
        ("high then high", Array(#""\uD800\uD800""#.utf8)),
        ("reversed pair", Array(#""\uDE00\uD83D""#.utf8)),
        ("invalid UTF-8 byte FF", [0x22, 0xFF, 0x22]),
        ("lone continuation byte", [0x22, 0x80, 0x22]),
        ("truncated two-byte sequence", [0x22, 0xC3, 0x22]),
        ("overlong encoding of /", [0x22, 0xC0, 0xAF, 0x22]),
        ("UTF-8 encoded surrogate", [0x22, 0xED, 0xA0, 0x80, 0x22]),
        ("beyond U+10FFFF", [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22]),
        ("invalid UTF-8 after an escape", [0x22, 0x5C, 0x6E, 0xFF, 0x22]),
        ("single quotes", Array("'abc'".utf8)),
    ]

    @Test(arguments: badStringCases)
    func badStrings(name: String, bytes: [UInt8]) {
        #expect(throws: JSONParseError.self, "\(name)") { try JSONParser.parse(bytes) }
        // The same bytes inside an array and as a member name.
        #expect(throws: JSONParseError.self, "\(name) in array") { try JSONParser.parse([0x5B] + bytes + [0x5D]) }
        #expect(throws: JSONParseError.self, "\(name) as key") {
            try JSONParser.parse([0x7B] + bytes + Array(":1}".utf8))
        }
    }

    // MARK: - Malformed documents

    @Test(arguments: [
        "", " ", "\n", "{", "}", "[", "]", "[1,]", "[,1]", "[1 2]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}",
        "{,}", "{a:1}", "{\"a\" 1}", "{1:1}", "{\"a\":1 \"b\":2}", "tru", "truex", "nul", "nulll", "True", "NULL",
        "fals", "1 2", "{} {}", "[]]", "{}}", "\"a\" \"b\"", "[1}", "{\"a\":1]", "\u{FEFF}{}", "/* */ {}",
        "{\"a\":1}x", "[\"a\",", "{\"a\":", "{\"a\":1,",
    ])
    func malformedDocuments(text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test func errorOffsetPointsAtTheProblem() {
        #expect(throws: JSONParseError(offset: 6, reason: "expected ',' or ']'")) { try JSONParser.parse("[1, 2 3]") }
        #expect(throws: JSONParseError(offset: 3, reason: "unexpected data after the value")) { try JSONParser.parse("{} x") }
        #expect(throws: JSONParseError(offset: 2, reason: "control character in a string")) {
            try JSONParser.parse("\"a\u{01}\"")
        }
        let error = JSONParseError(offset: 4, reason: "why")
        #expect(error.description == "why at byte 4")
    }

    // MARK: - Nesting limit

    static func nested(_ depth: Int, open: String = "[", close: String = "]") -> String {
        String(repeating: open, count: depth) + String(repeating: close, count: depth)
    }

    @Test func nestingExactlyAtTheLimitIsAccepted() throws {
        let value = try JSONParser.parse(Self.nested(JSONParser.defaultMaxDepth))
        var depth = 0
        var current = value
        while case .array(let items) = current {
            depth += 1
            current = items.first ?? .null
        }
        #expect(depth == 128)
        #expect(try JSONParser.parse(Self.nested(3), maxDepth: 3) == .array([.array([.array([])])]))
        #expect(try JSONParser.parse("[1]", maxDepth: 1) == .array([.int(1)]))
        #expect(try JSONParser.parse("1", maxDepth: 0) == .int(1))
    }

    @Test func nestingBeyondTheLimitIsAnError() {
        #expect(throws: JSONParseError(offset: 128, reason: "nesting deeper than 128")) {
            try JSONParser.parse(Self.nested(JSONParser.defaultMaxDepth + 1))
        }
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Self.nested(4), maxDepth: 3) }
        #expect(throws: JSONParseError.self) { try JSONParser.parse("[]", maxDepth: 0) }
        let objects = String(repeating: "{\"a\":", count: 129) + "1" + String(repeating: "}", count: 129)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(objects) }
        let objectsAtLimit = String(repeating: "{\"a\":", count: 128) + "1" + String(repeating: "}", count: 128)
        #expect((try? JSONParser.parse(objectsAtLimit)) != nil)
    }

    @Test func hugeNestingFailsWithoutCrashing() {
        // 100 000 unclosed brackets: the limit stops the descent long before the stack runs out.
        let open = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        #expect(throws: JSONParseError(offset: 128, reason: "nesting deeper than 128")) { try JSONParser.parse(open) }
        let closed = open + [UInt8](repeating: UInt8(ascii: "]"), count: 100_000)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(closed) }
        let objects = Array(String(repeating: "{\"a\":", count: 100_000).utf8)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(objects) }
    }

    // MARK: - Validation without building values

    /// skipValue must accept exactly what parse accepts.
    static let skipCases: [(String, [UInt8])] = {
        var cases: [(String, [UInt8])] = badStringCases.map { ("bad string: " + $0.0, $0.1) }
        for text in [
            "null", "true", "1", "-1.5e3", "\"a\\u00e9\\ud83d\\ude00\"", "[1,{\"a\":[null]}]", "{}", "[]",
            "\"\\uD800\"", "\"\\uDC00x\"", "tru", "[1,]", "{\"a\"}", "01", "1.",
        ] {
            cases.append((text, Array(text.utf8)))
        }
        return cases
    }()

    @Test(arguments: skipCases)
    func skipValueAgreesWithParse(name: String, bytes: [UInt8]) {
        let parsed = (try? JSONParser.parse(bytes)) != nil
        let skipped = bytes.withUnsafeBytes { buffer -> Bool in
            var parser = JSONParser(buffer)
            do {
                try parser.skipValue(depth: 0)
                return parser.position == buffer.count
            } catch {
                return false
            }
        }
        #expect(skipped == parsed, "\(name)")
    }

    // MARK: - JSONValue accessors

    @Test func accessors() throws {
        let value = try JSONParser.parse(#"{"i":5,"d":5.0,"f":5.5,"s":"x","b":true,"n":null,"a":[1],"o":{"k":2}}"#)
        #expect(value["i"]?.intValue == 5)
        #expect(value["d"]?.intValue == 5)
        #expect(value["f"]?.intValue == nil)
        #expect(value["f"]?.doubleValue == 5.5)
        #expect(value["i"]?.doubleValue == 5.0)
        #expect(value["s"]?.stringValue == "x")
        #expect(value["b"]?.boolValue == true)
        #expect(value["n"]?.isNull == true)
        #expect(value["a"]?.arrayValue == [.int(1)])
        #expect(value["o"]?.objectValue == ["k": .int(2)])
        #expect(value["missing"] == nil)
        #expect(value["i"]?["k"] == nil)
        #expect(value["i"]?.typeName == "integer")
        #expect(value["d"]?.typeName == "integer")
        #expect(value["f"]?.typeName == "number")
        #expect(value["s"]?.typeName == "string")
        #expect(value["b"]?.typeName == "boolean")
        #expect(value["n"]?.typeName == "null")
        #expect(value["a"]?.typeName == "array")
        #expect(value["o"]?.typeName == "object")
        #expect(JSONValue.double(1e300).intValue == nil)
        #expect(JSONValue.double(.nan).intValue == nil)
        #expect(JSONValue.double(.infinity).intValue == nil)
    }
}
