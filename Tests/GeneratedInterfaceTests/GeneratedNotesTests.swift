import Foundation
import MediatorClient
import MediatorProtocol
import Testing

// `Notes.swift` is not in this folder: the MediatorGenerator plugin makes it
// from Notes.mediator.json at build time, as it would for a user's target.

/// A service written against the generated protocol only.
struct NotesServiceFixture: NotesService {
    func add(_ params: AddParams, context: CallContext) async throws -> AddResult {
        AddResult(id: Int(params.text.count))
    }

    func list(_ params: ListParams, context: CallContext) async throws -> ListResult {
        ListResult(notes: [Note(id: 1, text: "hi")])
    }

    func watch(_ params: WatchParams, context: CallContext) async throws -> WatchResult {
        try await sendWatchPartial(["step": 1], context: context)
        return ["done": true]
    }

    func touch(_ params: TouchParams, context: CallContext) async throws {}
}

@Suite struct GeneratedNotesTests {
    static func json(_ value: some Encodable) throws -> JSONValue {
        try JSONParser.parse(try JSONEncoder().encode(value))
    }

    static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    @Test func paramsUseTheWireNamesAndLeaveAbsentOptionalsOut() throws {
        let params = AddParams(noteKind: .todo, tags: ["a"], text: "hi")
        #expect(try Self.json(params) == ["text": "hi", "tags": ["a"], "note_kind": "todo"])
        #expect(try Self.json(AddParams(text: "x")) == ["text": "x"])
    }

    @Test func decodingChecksRequiredMembersAndEnums() throws {
        let params = try Self.decode(AddParams.self, #"{"text": "hi", "due": null, "note_kind": "plain"}"#)
        #expect(params == AddParams(due: nil, noteKind: .plain, text: "hi"))
        #expect(throws: DecodingError.self) { try Self.decode(AddParams.self, #"{"tags": []}"#) }
        #expect(throws: DecodingError.self) { try Self.decode(AddParams.self, #"{"text": "x", "note_kind": "other"}"#) }
    }

    @Test func boundsAreRefusedBeforeSendingAndWhenDecoded() throws {
        // What the typed calls do with params before sending: invalid_params, nothing sent.
        do {
            _ = try JSONConversion.validatedParams(AddParams(tags: Array(repeating: "t", count: 9), text: "hi"))
            Issue.record("9 tags passed")
        } catch {
            #expect(error.code == .invalidParams)
            #expect(error.message.contains("tags: expected at most 8 items, found 9"), "\(error.message)")
        }
        #expect(try JSONConversion.validatedParams(AddParams(text: "hi")).text == "hi")
        // Decoding, as a component reads params: both forms refuse an empty text.
        #expect(throws: JSONConversionError.self) { try AddParams(jsonValue: ["text": ""]) }
        #expect(throws: (any Error).self) { try Self.decode(AddParams.self, #"{"text": ""}"#) }
        let long = String(repeating: "x", count: 201)
        #expect(throws: JSONConversionError.self) { try AddParams(jsonValue: ["text": .string(long)]) }
    }

    @Test func sharedDefinitionsBecomeNamedTypes() throws {
        let result = try Self.decode(ListResult.self, #"{"notes": [{"id": 1, "text": "a"}]}"#)
        #expect(result.notes == [Note(id: 1, text: "a")])
    }

    @Test func theComponentDeclaresTheInterfaceSpecsExactly() throws {
        let component = try Component(serving: NotesServiceFixture())
        #expect(component.target == "Notes")
        #expect(component.description == "Keeps short notes")
        let file = try JSONParser.parse(
            try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("Notes.mediator.json")))
        let expected = try (file["actions"]?.arrayValue ?? []).map { try ActionSpec(json: $0) }
        #expect(component.actionSpecs == expected)
        #expect(component.actionSpecs.map(\.name) == ["add", "list", "watch", "touch"])
    }

    @Test func theClientHasOneTypedMethodPerAction() async throws {
        // Compile-time shape only: no daemon here (the integration tests call through one).
        let methods: [String] = [
            "\(type(of: NotesClient.add))", "\(type(of: NotesClient.watch))", "\(type(of: NotesClient.touch))",
        ]
        #expect(methods.count == 3)
        #expect(NotesClient.target == "Notes")
    }
}
