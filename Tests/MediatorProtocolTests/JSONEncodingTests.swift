import Testing

@testable import MediatorProtocol

/// A small deterministic generator (SplitMix64), so that failures reproduce.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct JSONEncodingTests {
    // MARK: - Scalars

    @Test(arguments: [
        (JSONValue.null, "null"),
        (.bool(true), "true"),
        (.bool(false), "false"),
        (.int(0), "0"),
        (.int(-5), "-5"),
        (.int(Int64.max), "9223372036854775807"),
        (.int(Int64.min), "-9223372036854775808"),
        (.double(1.5), "1.5"),
        (.double(5000), "5000.0"),
        (.double(-0.0), "-0.0"),
        (.double(0.1), "0.1"),
        (.double(1e23), "1e+23"),
        (.double(1e-7), "1e-07"),
        (.double(9_223_372_036_854_775_808.0), "9.223372036854776e+18"),
        (.double(Double.greatestFiniteMagnitude), "1.7976931348623157e+308"),
        (.double(.nan), "null"),
        (.double(.infinity), "null"),
        (.double(-.infinity), "null"),
        (.string(""), "\"\""),
        (.array([]), "[]"),
        (.object([:]), "{}"),
    ])
    func scalars(value: JSONValue, expected: String) {
        #expect(value.jsonText == expected)
        #expect(value.encoded == Array(expected.utf8))
        #expect(value.description == expected)
    }

    // MARK: - Strings

    @Test(arguments: [
        ("abc", #""abc""#),
        ("a\"b", #""a\"b""#),
        ("a\\b", #""a\\b""#),
        ("a/b", #""a/b""#),
        ("line1\nline2", #""line1\nline2""#),
        ("\r\n", #""\r\n""#),
        ("\t", #""\t""#),
        ("\u{08}\u{0C}", #""\u0008\u000c""#),
        ("\u{0}", #""\u0000""#),
        ("\u{1F}", #""\u001f""#),
        ("\u{1B}[0m", #""\u001b[0m""#),
        ("\u{7F}", "\"\u{7F}\""),
        ("é中😀", "\"é中😀\""),
        ("\u{2028}\u{2029}", "\"\u{2028}\u{2029}\""),
        ("\"\\\"", #""\"\\\"""#),
    ])
    func stringEscaping(text: String, expected: String) throws {
        #expect(JSONValue.string(text).jsonText == expected)
        #expect(try JSONParser.parse(expected) == .string(text))
    }

    @Test func everyControlCharacterIsEscaped() throws {
        for code in UInt8(0)..<0x20 {
            let text = "a" + String(UnicodeScalar(code)) + "b"
            let bytes = JSONValue.string(text).encoded
            #expect(!bytes.contains(where: { $0 < 0x20 }), "byte \(code) left raw")
            #expect(try JSONParser.parse(bytes) == .string(text), "byte \(code)")
        }
    }

    @Test func encodeStringAppends() {
        var output = Array("x".utf8)
        JSONValue.encodeString("a\nb", into: &output)
        #expect(output == Array(#"x"a\nb""#.utf8))
        var more = Array("[".utf8)
        JSONValue.int(1).encode(into: &more)
        #expect(String(decoding: more, as: UTF8.self) == "[1")
    }

    // MARK: - Containers

    @Test func keysAreSorted() {
        let value: JSONValue = ["b": 1, "a": 2, "B": 3, "aa": 4, "_": 5, "a0": 6, "": 7]
        #expect(value.jsonText == #"{"":7,"B":3,"_":5,"a":2,"a0":6,"aa":4,"b":1}"#)
        let nested: JSONValue = ["z": ["y": 1, "x": [["d": 1, "c": 2]]], "m": nil]
        #expect(nested.jsonText == #"{"m":null,"z":{"x":[{"c":2,"d":1}],"y":1}}"#)
    }

    @Test func sortedOutputIsStable() {
        // Dictionaries hash with a per-process seed; the output must not depend on it.
        var members: [String: JSONValue] = [:]
        for index in 0..<200 { members["k\(index)"] = .int(Int64(index)) }
        let first = JSONValue.object(members).jsonText
        var rebuilt: [String: JSONValue] = [:]
        for index in (0..<200).reversed() { rebuilt["k\(index)"] = .int(Int64(index)) }
        #expect(JSONValue.object(rebuilt).jsonText == first)
        let keys = members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let expected = "{" + keys.map { "\"\($0)\":\(members[$0]!.jsonText)" }.joined(separator: ",") + "}"
        #expect(first == expected)
    }

    @Test func arraysKeepOrderAndAreCompact() {
        let value: JSONValue = [3, "two", [1, nil], ["k": false], 1.5]
        #expect(value.jsonText == #"[3,"two",[1,null],{"k":false},1.5]"#)
    }

    @Test func literalsBuildTheExpectedCases() {
        let value: JSONValue = ["i": 1, "d": 2.5, "s": "x", "b": true, "n": nil, "a": [1]]
        #expect(
            value
                == .object([
                    "i": .int(1), "d": .double(2.5), "s": .string("x"), "b": .bool(true), "n": .null,
                    "a": .array([.int(1)]),
                ]))
    }

    // MARK: - Pretty text

    @Test func prettyText() {
        let value: JSONValue = ["b": [1, 2], "a": [:], "c": ["x": nil, "w": []], "d": "t\nu"]
        let expected = """
            {
              "a": {},
              "b": [
                1,
                2
              ],
              "c": {
                "w": [],
                "x": null
              },
              "d": "t\\nu"
            }
            """
        #expect(value.prettyText() == expected)
        #expect(JSONValue.int(3).prettyText() == "3")
        #expect(JSONValue.array([]).prettyText() == "[]")
        #expect(JSONValue.object([:]).prettyText() == "{}")
        // Pretty text is still JSON, with the same value.
        #expect((try? JSONParser.parse(value.prettyText())) == value)
    }

    // MARK: - Round trips

    @Test(arguments: [
        "0", "-1", "9223372036854775807", "-9223372036854775808", "1.5", "-0.0", "1e+23", "5e-324",
        "1.7976931348623157e+308", "9.223372036854776e+18", "0.1", "true", "false", "null", "\"\"",
        #""\"\\\n\r\t\u0000\u001f""#, "\"é😀\u{2028}\"", "[]", "{}", #"[1,[2,[3,{"a":[]}]]]"#,
        #"{"a":1,"b":{"c":"d"},"e":[null,true]}"#,
    ])
    func canonicalTextRoundTrips(text: String) throws {
        // Text already in the encoder's canonical form comes back byte for byte.
        let value = try JSONParser.parse(text)
        #expect(value.jsonText == text)
    }

    @Test(arguments: [
        ("-0", "0"),
        ("1E3", "1000.0"),
        ("1e-3", "0.001"),
        ("5000.0", "5000.0"),
        ("9223372036854775808", "9.223372036854776e+18"),
        (#""\u0041\/\b\f""#, #""A/\u0008\u000c""#),
        (#""\ud83d\ude00""#, "\"😀\""),
        (#"{ "b" : 1 , "a" : [ 2 , 3 ] }"#, #"{"a":[2,3],"b":1}"#),
    ])
    func normalizingRoundTrips(text: String, expected: String) throws {
        let value = try JSONParser.parse(text)
        #expect(value.jsonText == expected)
        #expect(try JSONParser.parse(expected) == value)
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func randomValuesRoundTrip(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<200 {
            let value = Self.randomValue(depth: 0, using: &generator)
            let bytes = value.encoded
            #expect(!bytes.contains(0x0A), "raw LF in \(value)")
            #expect(!bytes.contains(0x0D), "raw CR in \(value)")
            #expect(!bytes.contains(where: { $0 < 0x20 }), "raw control character in \(value)")
            let parsed = try JSONParser.parse(bytes)
            #expect(parsed == value)
            // Encoding is deterministic: the parsed copy encodes to the same bytes.
            #expect(parsed.encoded == bytes)
        }
    }

    static let scalarPool: [Unicode.Scalar] = {
        var pool: [Unicode.Scalar] = (0x00...0x20).compactMap(Unicode.Scalar.init)
        pool += ["\"", "\\", "/", "a", "Z", "0", "{", "}", "[", "]", ":", ",", "\u{7F}", "\u{80}", "é", "\u{0301}",
            "中", "\u{2028}", "\u{FEFF}", "\u{FFFF}", "😀", "\u{10FFFF}"]
        return pool
    }()

    fileprivate static func randomString(using generator: inout SeededGenerator) -> String {
        let count = Int.random(in: 0...12, using: &generator)
        var text = ""
        for _ in 0..<count { text.unicodeScalars.append(scalarPool.randomElement(using: &generator)!) }
        return text
    }

    fileprivate static func randomValue(depth: Int, using generator: inout SeededGenerator) -> JSONValue {
        let choice = Int.random(in: 0..<(depth >= 4 ? 6 : 8), using: &generator)
        switch choice {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2:
            switch Int.random(in: 0..<4, using: &generator) {
            case 0: return .int(Int64.min)
            case 1: return .int(Int64.max)
            default: return .int(Int64.random(in: Int64.min...Int64.max, using: &generator) >> Int.random(in: 0..<64, using: &generator))
            }
        case 3:
            switch Int.random(in: 0..<4, using: &generator) {
            case 0: return .double(Double(bitPattern: UInt64.random(in: 0...0x7FEF_FFFF_FFFF_FFFF, using: &generator)))
            case 1: return .double(-Double(bitPattern: UInt64.random(in: 0...0x7FEF_FFFF_FFFF_FFFF, using: &generator)))
            case 2: return .double(Double(Int.random(in: -1000...1000, using: &generator)) / 8)
            default: return .double(Double.random(in: -1e6...1e6, using: &generator))
            }
        case 4, 5: return .string(randomString(using: &generator))
        case 6:
            let count = Int.random(in: 0...4, using: &generator)
            return .array((0..<count).map { _ in randomValue(depth: depth + 1, using: &generator) })
        default:
            let count = Int.random(in: 0...4, using: &generator)
            var members: [String: JSONValue] = [:]
            for _ in 0..<count {
                members[randomString(using: &generator)] = randomValue(depth: depth + 1, using: &generator)
            }
            return .object(members)
        }
    }
}

@Suite("JSON fast paths agree with the general ones")
struct JSONFastPathTests {
    @Test(arguments: [Int64.min, Int64.min + 1, -1_000_000_000_000_000_000, -999_999_999_999_999_999, -10, -1, 0, 1, 9, 10,
                      99, 100, 123_456_789, 999_999_999_999_999_999, 1_000_000_000_000_000_000, Int64.max])
    func integersEncodeAndParseBack(number: Int64) throws {
        #expect(JSONValue.int(number).jsonText == String(number))
        #expect(try JSONParser.parse(String(number)) == .int(number))
    }

    @Test(arguments: ["-0", "0", "-9223372036854775808", "9223372036854775807", "9223372036854775808", "1e2", "1.5", "-0.0"])
    func numbersParseAsBefore(text: String) throws {
        let expected: JSONValue = Int64(text).map(JSONValue.int) ?? .double(Double(text) ?? .nan)
        #expect(try JSONParser.parse(text) == expected)
    }

    @Test(arguments: ["", "plain ascii", "quote \" and \\ backslash", "tab\tnew\nline\rcr", "\u{01}\u{1F}", "é ünïcödé", "emoji 🦀 end", "\u{7F}"])
    func stringsEncodeAndParseBack(text: String) throws {
        let encoded = JSONValue.string(text).encoded
        #expect(try JSONParser.parse(encoded) == .string(text))
        #expect(!encoded.contains(0x0A))
    }

    /// The string scanners step a word (8 bytes) at a time: a byte that
    /// needs care must be found at every offset of every length, including
    /// the tail shorter than a word.
    @Test(arguments: ["\"", "\\", "\n", "\u{01}", "é", "🦀", "\u{7F}"])
    func aSpecialCharacterAtEveryOffsetRoundTrips(special: String) throws {
        for length in 0...24 {
            for offset in 0...length {
                let text = String(repeating: "a", count: offset) + special + String(repeating: "b", count: length - offset)
                let encoded = JSONValue.string(text).encoded
                #expect(try JSONParser.parse(encoded) == .string(text), "\(length) \(offset)")
                var expected: [UInt8] = []
                JSONValue.string(text).encodeByteByByte(into: &expected)
                #expect(encoded == expected, "\(length) \(offset)")
            }
        }
    }

    @Test func aControlCharacterOrBadUTF8AtEveryOffsetIsRefused() {
        for length in 1...20 {
            for offset in 0..<length {
                for bad: UInt8 in [0x00, 0x0A, 0x1F, 0xFF, 0xC3] {
                    var bytes = [UInt8](repeating: UInt8(ascii: "x"), count: length)
                    bytes[offset] = bad
                    #expect(throws: JSONParseError.self, "\(length) \(offset) \(bad)") {
                        try JSONParser.parse([0x22] + bytes + [0x22])
                    }
                }
            }
        }
    }

    @Test func invalidUTF8InAStringIsStillRefused() {
        let bytes: [UInt8] = [0x22, 0x61, 0xFF, 0x62, 0x22]
        #expect(throws: JSONParseError.self) { try JSONParser.parse(bytes) }
    }

    @Test func objectsEncodeMembersSorted() {
        let value: JSONValue = ["b": 1, "a": ["z": true, "y": .null], "c": "x"]
        #expect(value.jsonText == #"{"a":{"y":null,"z":true},"b":1,"c":"x"}"#)
    }

    @Test(arguments: [#"{}"#, #" { "pid" : 1 , "uid":2,"gid":3,"name":"n" } "#, #"{"a":1,"a":2}"#, #"{"x":{"y":[1,2]}}"#])
    func forEachMemberVisitsWhatParseReads(text: String) throws {
        var visited: [String: JSONValue] = [:]
        var count = 0
        try Array(text.utf8).withUnsafeBytes { bytes in
            try JSONParser.forEachMember(bytes) { key, value in
                visited[key] = value
                count += 1
            }
        }
        #expect(JSONValue.object(visited) == (try JSONParser.parse(text)))
        #expect(count == text.filter { $0 == ":" }.count - (text.contains("\"x\"") ? 1 : 0))
    }

    @Test(arguments: [#"[]"#, #"{"a":1"#, #"{"a":1}x"#, #"1"#, #"{"a" 1}"#])
    func forEachMemberRefusesWhatIsNotOneObject(text: String) {
        #expect(throws: JSONParseError.self) {
            try Array(text.utf8).withUnsafeBytes { bytes in try JSONParser.forEachMember(bytes) { _, _ in } }
        }
    }
}

extension JSONValue {
    /// The encoding of a string by the byte-by-byte rule that the word scan
    /// replaced: `"` and `\\` and control characters escaped, the rest copied.
    fileprivate func encodeByteByByte(into output: inout [UInt8]) {
        guard case .string(let text) = self else { return }
        let hex = Array("0123456789abcdef".utf8)
        output.append(0x22)
        for byte in text.utf8 {
            switch byte {
            case 0x22: output += [0x5C, 0x22]
            case 0x5C: output += [0x5C, 0x5C]
            case 0x0A: output += [0x5C, UInt8(ascii: "n")]
            case 0x0D: output += [0x5C, UInt8(ascii: "r")]
            case 0x09: output += [0x5C, UInt8(ascii: "t")]
            case ..<0x20: output += [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: output.append(byte)
            }
        }
        output.append(0x22)
    }
}
