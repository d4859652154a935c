import Logging
import MediatorClient
import MediatorNATS
import MediatorProtocol
import Testing

@testable import MediatorNATSBridge

/// Sealed memfds across hosts as bytes: how blobs are cut into chunks, put
/// together again, named in the bridge's messages, and made memfds.
@Suite("Bridge blobs: descriptors across hosts")
struct BridgeBlobsTests {
    @Test func blobsAreCutIntoChunksOfAtMostTheServersPayloadLessRoomForHeaders() {
        #expect(BridgeBlobs.chunkBytes(maxPayload: 1 << 20) == (1 << 20) - 1024)
        #expect(BridgeBlobs.chunkBytes(maxPayload: 10) == 1)
        let chunks = BridgeBlobs.chunks(sizes: [10, 0, 4, 3], chunkBytes: 4)
        #expect(chunks == [
            .init(blob: 0, offset: 0, count: 4), .init(blob: 0, offset: 4, count: 4), .init(blob: 0, offset: 8, count: 2),
            .init(blob: 2, offset: 0, count: 4), .init(blob: 3, offset: 0, count: 3),
        ])
        #expect(chunks.map(\.header).compactMap(BridgeBlobs.parseHeader).map(\.offset) == [0, 4, 8, 0, 0])
        #expect(BridgeBlobs.parseHeader("1") == nil)
        #expect(BridgeBlobs.parseHeader("1 -2") == nil)
        #expect(BridgeBlobs.parseHeader("x 2") == nil)
    }

    @Test func chunksInOrderMakeTheBlobsAgain() {
        let blobs: [[UInt8]] = [Array(0..<10), [], [7, 7, 7]]
        var assembly = BridgeBlobs.Assembly(sizes: blobs.map(\.count))
        #expect(!assembly.isComplete)
        for chunk in BridgeBlobs.chunks(sizes: blobs.map(\.count), chunkBytes: 3) {
            #expect(assembly.add(blob: chunk.blob, offset: chunk.offset, bytes: blobs[chunk.blob][chunk.offset..<chunk.offset + chunk.count]) == nil)
        }
        #expect(assembly.isComplete)
        #expect(assembly.blobs == blobs)
        // Nothing to wait for when every blob is empty.
        #expect(BridgeBlobs.Assembly(sizes: [0, 0]).isComplete)
    }

    @Test func aLostOrOversizedChunkIsAnErrorNotAWrongMemfd() {
        var assembly = BridgeBlobs.Assembly(sizes: [4, 4])
        #expect(assembly.add(blob: 0, offset: 0, bytes: [1, 2]) == nil)
        // The chunk at offset 2 was lost.
        #expect(assembly.add(blob: 0, offset: 4, bytes: [1])?.code == .internal)
        #expect(assembly.add(blob: 1, offset: 0, bytes: [1])?.code == .internal)
        #expect(assembly.add(blob: 0, offset: 2, bytes: [3, 4, 5])?.code == .internal)
        #expect(assembly.add(blob: 0, offset: 2, bytes: [UInt8]())?.code == .internal)
        #expect(assembly.add(blob: 0, offset: 2, bytes: [3, 4]) == nil)
        #expect(!assembly.isComplete)
    }

    @Test func sizesAreCheckedAgainstTheBoundPerCall() throws {
        #expect(try BridgeBlobs.sizes(nil, limit: 10).get() == [])
        #expect(try BridgeBlobs.sizes([4, 6], limit: 10).get() == [4, 6])
        #expect(throws: MediatorError(.frameTooLarge, "descriptors across hosts carry at most 10 bytes per call", data: ["max_fd_bytes": 10])) {
            try BridgeBlobs.sizes([4, 7], limit: 10).get()
        }
        #expect(BridgeBlobs.checkTotal([Int.max, 1], limit: Int.max)?.code == .frameTooLarge)
        for bad: JSONValue in [[-1], ["1"], 3] {
            #expect(throws: MediatorError.self) { try BridgeBlobs.sizes(bad, limit: 10).get() }
        }
    }

    @Test func aCallAndAResultNameTheirBlobsAndTheVersion() throws {
        let request = BridgeMessages.CallRequest(
            action: "store", params: ["data": ["$fd": 0]], timeoutMs: 5000, more: false, fds: 1, blobs: [5 << 20])
        #expect(BridgeMessages.CallRequest.decode(request.encoded) == .success(request))
        // Over this host's bound; a $fd with no blob; blobs without the version.
        #expect(throws: MediatorError.self) { try BridgeMessages.CallRequest.decode(request.encoded, maxBlobBytes: 1 << 20).get() }
        let dangling = BridgeMessages.CallRequest(action: "a", params: ["data": ["$fd": 1]], timeoutMs: nil, more: false, fds: 1, blobs: [1])
        #expect(throws: MediatorError.self) { try BridgeMessages.CallRequest.decode(dangling.encoded).get() }
        let unversioned = Array(#"{"action":"a","params":{"d":{"$fd":0}},"blobs":[1]}"#.utf8)
        #expect(throws: MediatorError.self) { try BridgeMessages.CallRequest.decode(unversioned).get() }

        let result = BridgeMessages.Reply.resultWithBlobs(["data": ["$fd": 0]], continues: false, sizes: [3])
        #expect(BridgeMessages.Reply.decode(result.encoded) == result)
        #expect(BridgeMessages.Reply.decode(result.encoded, maxBlobBytes: 2).map { reply in
            if case .error(let error) = reply { return error.code == .frameTooLarge }
            return false
        } == true)
        let ready = BridgeMessages.Reply.sendBlobs(subject: "_INBOX.x.1")
        #expect(BridgeMessages.Reply.decode(ready.encoded) == ready)

        // A host says which version it takes; an older one says nothing.
        let announced = BridgeMessages.Announcement(host: "b", targets: [], intervalMs: 1000)
        #expect(BridgeMessages.Announcement.decode(announced.encoded)?.fds == BridgeBlobs.version)
        #expect(BridgeMessages.Announcement.decode(Array(#"{"host":"b","targets":[],"interval_ms":1000}"#.utf8))?.fds == nil)
    }

    /// The importing side: a result's chunks become a new sealed memfd
    /// holding the same bytes, and a chunk lost fails the call.
    @Test func aResultsChunksArriveAsANewSealedMemfd() async throws {
        let calls = RemoteCalls(
            inbox: "_INBOX.t", subjects: BridgeSubjects(prefix: "mediator"), host: "hostA", livenessTimeout: .seconds(5),
            logger: Logger(label: "bridge-blobs-tests"))
        let content = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        func send(_ token: String, skipping lost: Int? = nil) {
            calls.deliver(NATSMessage(
                subject: "_INBOX.t.\(token)",
                payload: BridgeMessages.Reply.resultWithBlobs(["m": ["$fd": 0]], continues: false, sizes: [content.count]).encoded))
            for (index, chunk) in BridgeBlobs.chunks(sizes: [content.count], chunkBytes: 1000).enumerated() where index != lost {
                calls.deliver(NATSMessage(
                    subject: "_INBOX.t.\(token)", headers: [BridgeBlobs.chunkHeader: [chunk.header]],
                    payload: Array(content[chunk.offset..<chunk.offset + chunk.count])))
            }
        }
        let (token, replies) = calls.expect("Files", timeout: .seconds(10))
        send(token)
        var iterator = replies.makeAsyncIterator()
        let answer = try #require(await iterator.next())
        #expect(answer.reply == .result(["m": ["$fd": 0]], continues: false))
        let memfd = try #require(answer.descriptors.first)
        #expect(memfd.seals.map { $0 & OwnedFileDescriptor.immutableSeals } == OwnedFileDescriptor.immutableSeals)
        #expect(try MappedMemory(mapping: memfd).bytes == content)

        let (lostToken, lostReplies) = calls.expect("Files", timeout: .seconds(10))
        send(lostToken, skipping: 2)
        for await answer in lostReplies {
            guard case .error(let error) = answer.reply else {
                Issue.record("not an error: \(answer.reply)")
                break
            }
            #expect(error.code == .internal)
            #expect(answer.descriptors.isEmpty)
        }
    }
}

/// The version: a caller sends blobs only to hosts that announce it.
@Suite("Bridge blobs: versions")
struct BridgeBlobsVersionTests {
    @Test func descriptorsGoOnlyToATargetWhoseEveryHostTakesThem() throws {
        let calls = RemoteCalls(
            inbox: "_INBOX.v", subjects: BridgeSubjects(prefix: "mediator"), host: "hostA", livenessTimeout: .seconds(5),
            logger: Logger(label: "bridge-blobs-tests"))
        func announce(_ host: String, fds: Int64?) {
            let announcement = BridgeMessages.Announcement(
                host: host, targets: [.init(name: "Files", description: nil, actions: [])], intervalMs: 2000, fds: fds)
            calls.heard(NATSMessage(subject: "mediator.hosts", payload: announcement.encoded))
        }
        // Nobody announces it yet.
        #expect(throws: MediatorError.self) { try calls.checkDescriptorsCanGo(to: "Files") }
        announce("hostB", fds: BridgeBlobs.version)
        try calls.checkDescriptorsCanGo(to: "Files")
        // An older bridge serves it too: the queue group may pick it.
        announce("hostC", fds: nil)
        #expect(throws: MediatorError.self) { try calls.checkDescriptorsCanGo(to: "Files") }
        do {
            try calls.checkDescriptorsCanGo(to: "Files")
        } catch {
            #expect(error.code == .fdsNotSupported)
        }
        announce("hostC", fds: 2)
        #expect(throws: MediatorError.self) { try calls.checkDescriptorsCanGo(to: "Files") }
    }
}
