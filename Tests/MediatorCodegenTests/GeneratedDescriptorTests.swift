#if canImport(Glibc)
import Glibc
#endif
import MediatorClient
import MediatorCodegen
import MediatorProtocol
import Testing

/// Descriptor members (`"format": "fd"`, issue 26) in generated Swift: the
/// golden Descriptors interface's types carry `OwnedFileDescriptor`s,
/// written `{"$fd": I}` with the descriptor appended to a `DescriptorList`,
/// and read back from the list; a handle nobody keeps closes its descriptor.
@Suite struct GeneratedDescriptorTests {
    /// A pipe: the read end as a handle, and the write end's number (the
    /// caller's to close) to tell whether the read end is still open.
    static func pipeEnds() throws -> (read: OwnedFileDescriptor, write: Int32) {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        return (OwnedFileDescriptor(taking: ends[0]), ends[1])
    }

    /// Whether the pipe of `writeEnd` has no reader left: poll says POLLERR
    /// then, which no later descriptor that reuses the number could fake.
    static func readerClosed(_ writeEnd: Int32) -> Bool {
        var entry = pollfd(fd: writeEnd, events: Int16(POLLOUT), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLERR) != 0
    }

    @Test func encodingAppendsEachDescriptorAndWritesItsIndex() throws {
        let (a, b, c) = (try Self.pipeEnds(), try Self.pipeEnds(), try Self.pipeEnds())
        defer { for end in [a.write, b.write, c.write] { close(end) } }
        let result = OpenResult(extra: [b.read, c.read], file: a.read, log: Labelled(file: nil, label: "log"))
        var list = DescriptorList()
        let json = result.jsonValue(collecting: &list)
        // Members in the order of their JSON names: extra, file, log.
        #expect(json == ["extra": [["$fd": 0], ["$fd": 1]], "file": ["$fd": 2], "log": ["file": nil, "label": "log"]])
        #expect(list.descriptors.map(ObjectIdentifier.init) == [b.read, c.read, a.read].map(ObjectIdentifier.init))
    }

    /// One handle in two members is sent once, both naming its index: the
    /// same list that untyped calls build with `reference(_:)`.
    @Test func encodingSendsAHandleNamedTwiceOnce() throws {
        let ends = try Self.pipeEnds()
        defer { close(ends.write) }
        var list = DescriptorList()
        let json = OpenResult(extra: [ends.read], file: ends.read).jsonValue(collecting: &list)
        #expect(json == ["extra": [["$fd": 0]], "file": ["$fd": 0]])
        #expect(list.count == 1)
        #expect(list.reference(ends.read) == ["$fd": 0])
    }

    @Test func decodingTakesTheDescriptorsItsIndexesName() throws {
        let (a, b) = (try Self.pipeEnds(), try Self.pipeEnds())
        defer { for end in [a.write, b.write] { close(end) } }
        let list = DescriptorList([a.read, b.read])
        let result = try OpenResult(
            jsonValue: ["file": ["$fd": 1], "extra": [["$fd": 0], ["$fd": 1]], "log": ["label": "l", "file": ["$fd": 0]]],
            descriptors: list)
        #expect(result.file === b.read)
        #expect(result.extra?.map(ObjectIdentifier.init) == [a.read, b.read].map(ObjectIdentifier.init))
        #expect(result.log?.file === a.read)
        // A required nullable descriptor may be null, and an optional one absent.
        let plain = try OpenResult(jsonValue: ["file": ["$fd": 0], "log": ["label": "l", "file": nil]], descriptors: list)
        #expect(plain.log?.file == nil && plain.extra == nil)
    }

    static let refused: [(JSONValue, Int, String)] = [
        (["file": ["$fd": 1]], 1, "file: expected a descriptor index from 0 to 0, found 1"),
        (["file": ["$fd": 0]], 0, "file: expected a descriptor, but the message has none, found 0"),
        (["file": ["$fd": -1]], 1, "file: expected a descriptor index from 0 to 0, found -1"),
        (["file": ["$fd": "0"]], 1, #"file: expected a descriptor {"$fd": I}, found {"$fd":"0"}"#),
        (["file": ["$fd": 0, "x": 1]], 1, #"file: expected a descriptor {"$fd": I}, found {"$fd":0,"x":1}"#),
        (["file": 3], 1, #"file: expected a descriptor {"$fd": I}, found 3"#),
        ([:], 1, "file: expected a member file, found missing"),
        (["file": ["$fd": 0], "extra": [["$fd": 0], ["$fd": 4]]], 1, "extra.1: expected a descriptor index from 0 to 0, found 4"),
        (["file": ["$fd": 0], "log": ["label": "too long a label", "file": nil]], 1,
         "log.label: expected at most 8 characters, found 16"),
    ]

    @Test(arguments: refused)
    func decodingRefuses(json: JSONValue, count: Int, message: String) throws {
        let ends = try (0..<count).map { _ in try Self.pipeEnds() }
        defer { for end in ends { close(end.write) } }
        #expect(throws: JSONConversionError.self) {
            try OpenResult(jsonValue: json, descriptors: DescriptorList(ends.map(\.read)))
        }
        do {
            _ = try OpenResult(jsonValue: json, descriptors: DescriptorList(ends.map(\.read)))
        } catch {
            #expect(error.description == message)
        }
    }

    @Test func aDescriptorNobodyKeepsIsClosed() throws {
        var (taken, kept): ([Int32], [Int32]) = ([0, 0], [0, 0])
        try #require(pipe(&taken) == 0 && pipe(&kept) == 0)
        defer { for end in [taken[1], kept[1]] { close(end) } }
        // The read ends are owned by the list alone, then by the value alone.
        var result: TailResult? = try TailResult(
            jsonValue: ["chunk": ["$fd": 0]],
            descriptors: DescriptorList([OwnedFileDescriptor(taking: taken[0]), OwnedFileDescriptor(taking: kept[0])]))
        #expect(!Self.readerClosed(taken[1]))
        #expect(Self.readerClosed(kept[1]), "a descriptor no value took is closed with the list")
        #expect(result?.chunk.rawValue == taken[0])
        result = nil
        #expect(Self.readerClosed(taken[1]), "the value's handle closed its descriptor when dropped")
    }

    @Test func aRootDescriptorAndOnewayParamsConvert() throws {
        let ends = try Self.pipeEnds()
        defer { close(ends.write) }
        var list = DescriptorList()
        #expect(DropParams(file: ends.read).jsonValue(collecting: &list) == ["file": ["$fd": 0]])
        let root: MemfdResult = try MemfdResult.decode(from: ["$fd": 0], descriptors: list)
        #expect(root === ends.read)
    }

    /// The params' bounds are checked before sending, as for any typed call.
    @Test func validateChecksTheOtherMembers() throws {
        #expect(throws: JSONConversionError.self) { try OpenParams(path: String(repeating: "x", count: 4097)).validate() }
        let ends = try Self.pipeEnds()
        defer { close(ends.write) }
        #expect(throws: JSONConversionError.self) { try OpenResult(file: ends.read, log: Labelled(file: nil, label: "123456789")).validate() }
    }

    /// Only a oneway action with descriptors is left out (the library
    /// has no oneway call passing them); the others are typed calls and
    /// handlers, the component accepting descriptors.
    @Test func onlyOnewayActionsWithDescriptorsAreLeftOut() throws {
        let source = try SwiftGenerator.generate(
            interface: try GoldenTests.interface("Descriptors"), fileName: "Descriptors.mediator.json")
        #expect(source.contains("/// Not here: `drop`, oneway with a descriptor in its params"))
        #expect(source.contains("public func `open`(_ params: OpenParams, timeout: Duration? = nil)"))
        #expect(!source.contains("func drop("))
        let component = try Component(serving: StubDescriptors())
        #expect(component.acceptsDescriptors)
        #expect(component.actionSpecs.map(\.name).sorted() == ["memfd", "open", "size", "tail", "track"])
    }

    /// Bounds and descriptor indexes fail as a typed call's: params out of
    /// bounds are `invalid_params` (nothing sent), a result naming a
    /// descriptor that did not come is `invalid_result`, params likewise
    /// `invalid_params` for a handler.
    @Test func typedDescriptorCallsFailAsTypedCalls() throws {
        var list = DescriptorList()
        let error = #expect(throws: MediatorError.self) { try list.params(OpenParams(path: String(repeating: "x", count: 4097))) }
        #expect(error?.code == .invalidParams)
        #expect(list.isEmpty)
        let reply = MediatorReply(result: ["file": ["$fd": 0]])
        let resultError = #expect(throws: MediatorError.self) { try reply.decodedResult(as: OpenResult.self) }
        #expect(resultError?.code == .invalidResult)
        let ends = try Self.pipeEnds()
        defer { close(ends.write) }
        let encoded = MediatorReply(encoding: OpenResult(file: ends.read))
        #expect(encoded.result == ["file": ["$fd": 0]])
        #expect(try encoded.decodedResult(as: OpenResult.self).file === ends.read)
    }
}

/// A DescriptorsService whose actions are never called: enough to build
/// its component.
private struct StubDescriptors: DescriptorsService {
    struct NotCalled: Error {}
    func open(_ params: OpenParams, context: CallContext) async throws -> OpenResult { throw NotCalled() }
    func tail(_ params: TailParams, context: CallContext) async throws -> TailResult { throw NotCalled() }
    func track(_ params: TrackParams, context: CallContext) async throws -> TrackResult { throw NotCalled() }
    func memfd(_ params: MemfdParams, context: CallContext) async throws -> MemfdResult { throw NotCalled() }
    func size(_ params: SizeParams, context: CallContext) async throws -> SizeResult { throw NotCalled() }
}
