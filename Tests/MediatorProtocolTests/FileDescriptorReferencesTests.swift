import Testing

@testable import MediatorProtocol

/// `{"$fd": I}` values (contract section 8), found in JSON text (the
/// daemon's form) and in a decoded value (a library's): both must accept
/// and refuse the same values and find the same indexes.
@Suite struct FileDescriptorReferencesTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var json: String
        var fds: Int
        /// The indexes found, or nil when refused.
        var indexes: [Int]?
        /// When refused: the start of the message (the path, then why).
        var says: String = ""
        var testDescription: String { "\(json) with fds \(fds)" }
    }

    static let cases: [Case] = [
        Case(json: "{}", fds: 1, indexes: []),
        Case(json: #"{"n":1,"s":"x","b":true,"z":null,"a":[]}"#, fds: 2, indexes: []),
        Case(json: #"{"f":{"$fd":0}}"#, fds: 1, indexes: [0]),
        Case(json: #"{"$fd":0}"#, fds: 1, indexes: [0]),
        // Descriptors left unreferenced are allowed: their receiver closes them.
        Case(json: #"{"f":{"$fd":1}}"#, fds: 3, indexes: [1]),
        // An index referenced twice is the same descriptor.
        Case(json: #"{"a":[{"$fd":1},{"$fd":0}],"b":{"c":{"$fd":1}}}"#, fds: 2, indexes: [0, 1]),
        Case(json: #"[{"$fd":2.0},{"$fd":1e0},{"$fd":-0}]"#, fds: 3, indexes: [0, 1, 2]),
        Case(json: #"{"f":{"\u0024fd":0}}"#, fds: 1, indexes: [0]),
        Case(json: #"{"f":{"\u0024\u0066\u0064":0}}"#, fds: 1, indexes: [0]),
        Case(json: #"{"f":{"$fdx":0,"fd":1,"$f":2,"$FD":3,"\u0024fdx":4}}"#, fds: 1, indexes: []),
        Case(json: #"{"s":"{\"$fd\":5}","$fd-like":{"x":{"$fd ":9}}}"#, fds: 1, indexes: []),
        Case(json: #"{"deep":[[[{"x":[{"$fd":252}]}]]]}"#, fds: 253, indexes: [252]),

        Case(json: #"{"f":{"$fd":1}}"#, fds: 1, indexes: nil, says: #"params.f: "$fd" 1 is out of range: the message has "fds": 1"#),
        Case(json: #"{"f":{"$fd":-1}}"#, fds: 2, indexes: nil, says: #"params.f: "$fd" -1 is out of range"#),
        Case(json: #"{"f":{"$fd":0}}"#, fds: 0, indexes: nil, says: #"params.f: "$fd" 0 refers to no descriptor"#),
        Case(json: #"{"f":{"$fd":0,"x":1}}"#, fds: 1, indexes: nil, says: "params.f: an object with \"$fd\" stands for a descriptor and must have no other member"),
        Case(json: #"{"f":{"x":1,"$fd":0}}"#, fds: 1, indexes: nil, says: "params.f: an object with \"$fd\""),
        Case(json: #"{"f":{"$fd":"0"}}"#, fds: 1, indexes: nil, says: #"params.f: "$fd" must be an integer"#),
        Case(json: #"{"f":{"$fd":0.5}}"#, fds: 1, indexes: nil, says: "params.f: \"$fd\" must be an integer, the index of a descriptor sent with the message; got number"),
        Case(json: #"{"f":{"$fd":null}}"#, fds: 1, indexes: nil, says: #"params.f: "$fd" must be an integer"#),
        Case(json: #"{"f":{"$fd":true}}"#, fds: 1, indexes: nil, says: #"params.f: "$fd" must be an integer"#),
        Case(json: #"{"f":{"$fd":[0]}}"#, fds: 1, indexes: nil, says: "params.f: \"$fd\" must be an integer, the index of a descriptor sent with the message; got array"),
        Case(json: #"{"f":{"$fd":{"$fd":0}}}"#, fds: 1, indexes: nil, says: #"params.f: "$fd" must be an integer"#),
        Case(json: #"{"f":{"$fd":99999999999999999999}}"#, fds: 1, indexes: nil, says: #"params.f: "$fd" must be an integer"#),
        Case(json: #"{"list":[1,{"$fd":0},{"$fd":7}]}"#, fds: 2, indexes: nil, says: #"params.list[2]: "$fd" 7 is out of range"#),
        Case(json: #"{"a b":{"$fd":7}}"#, fds: 2, indexes: nil, says: #"params["a b"]: "$fd" 7"#),
        Case(json: #"{"x":{"y":[{"$fd":0,"z":{}}]}}"#, fds: 1, indexes: nil, says: "params.x.y[0]: an object with \"$fd\""),
        Case(json: #"{"$fd":1}"#, fds: 1, indexes: nil, says: #"params: "$fd" 1 is out of range"#),
    ]

    @Test(arguments: cases)
    func textAndValueAgree(_ testCase: Case) throws {
        let bytes = Array(testCase.json.utf8)
        let fromText = bytes.withUnsafeBytes { raw in
            Result { () throws(MediatorError) in try FileDescriptorReferences.indexes(in: raw, fds: testCase.fds, root: "params") }
        }
        let value = try JSONParser.parse(testCase.json)
        let fromValue = Result { () throws(MediatorError) in
            try FileDescriptorReferences.indexes(in: value, fds: testCase.fds, root: "params")
        }
        for found in [fromText, fromValue] {
            switch (found, testCase.indexes) {
            case (.success(let indexes), let expected?):
                #expect(indexes == expected)
            case (.failure(let error), nil):
                #expect(error.code == .badRequest)
                #expect(error.message.hasPrefix(testCase.says), "\(error.message)")
            case (.success(let indexes), nil):
                Issue.record("accepted with \(indexes)")
            case (.failure(let error), _?):
                Issue.record("refused: \(error.message)")
            }
        }
    }

    /// What only the text can hold, or only the text can get wrong.
    @Test(arguments: [
        (#"{"f":{"$fd":0,"$fd":0}}"#, #"params.f: an object with "$fd""#),
        (#"{"f":{"$fd":0,"\u0024fd":0}}"#, #"params.f: an object with "$fd""#),
        (#"{"f":"#, "params: malformed JSON"),
        (#"{"f":{"$fd":0}} x"#, "params: malformed JSON"),
        (#"{"f":{"$fd":01}}"#, "params: malformed JSON"),
        (#"{"f":{"$fd":0}"#, "params: malformed JSON"),
        (#"{"f" {"$fd":0}}"#, "params: malformed JSON"),
        (#"[1 2]"#, "params: malformed JSON"),
        ("", "params: malformed JSON"),
    ])
    func textOnlyRefusals(json: String, says: String) {
        let bytes = Array(json.utf8)
        let found = bytes.withUnsafeBytes { raw in
            Result { () throws(MediatorError) in try FileDescriptorReferences.indexes(in: raw, fds: 1, root: "params") }
        }
        switch found {
        case .success(let indexes): Issue.record("accepted with \(indexes)")
        case .failure(let error): #expect(error.code == .badRequest && error.message.hasPrefix(says), "\(error.message)")
        }
    }

    @Test func nestingIsBoundedInBothForms() throws {
        let deep = #"{"a":{"b":{"c":{"$fd":0}}}}"#
        let bytes = Array(deep.utf8)
        let value = try JSONParser.parse(deep)
        // Four levels: accepted at a bound of 4, refused at 3.
        #expect(try FileDescriptorReferences.indexes(in: value, fds: 1, root: "result", maxDepth: 4) == [0])
        #expect(try bytes.withUnsafeBytes { try FileDescriptorReferences.indexes(in: $0, fds: 1, root: "result", maxDepth: 4) } == [0])
        #expect(throws: MediatorError.self) { try FileDescriptorReferences.indexes(in: value, fds: 1, root: "result", maxDepth: 3) }
        #expect(throws: MediatorError.self) {
            try bytes.withUnsafeBytes { try FileDescriptorReferences.indexes(in: $0, fds: 1, root: "result", maxDepth: 3) }
        }
    }

    /// The daemon's use: the params of a parsed frame, as its bytes.
    @Test func paramsOfAParsedFrame() throws {
        let frame = Array(#"{"id":1,"target":"Files","action":"open","fds":2,"params":{"in":{"$fd":1},"out":{"$fd":0}}}"#.utf8)
        let envelope = try EnvelopeParser.parse(frame).get()
        let range = try #require(envelope.paramsRange)
        let indexes = try frame.withUnsafeBytes { raw in
            try FileDescriptorReferences.indexes(in: UnsafeRawBufferPointer(rebasing: raw[range]), fds: envelope.fds, root: "params")
        }
        #expect(indexes == [0, 1])
    }

    /// One pass over the value: a large one (every index referenced many
    /// times, in a wide array) gives every index once.
    @Test func largeValue() throws {
        let items = (0..<50_000).map { #"{"k":{"$fd":\#($0 % 253)}}"# }
        let json = "{\"items\":[" + items.joined(separator: ",") + "]}"
        let bytes = Array(json.utf8)
        let fromText = try bytes.withUnsafeBytes { try FileDescriptorReferences.indexes(in: $0, fds: 253, root: "params") }
        #expect(fromText == Array(0..<253))
        let fromValue = try FileDescriptorReferences.indexes(in: JSONParser.parse(json), fds: 253, root: "params")
        #expect(fromValue == Array(0..<253))
    }
}
