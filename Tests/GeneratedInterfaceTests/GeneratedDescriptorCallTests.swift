#if canImport(Glibc)
import Glibc
#endif
import MediatorClient
import MediatorProtocol
import MediatorTesting
import SocketTesting
import Testing

// `Recorder.swift` comes from Recorder.mediator.json through the
// MediatorGenerator plugin, as Notes.swift does.

/// A Recorder written against the generated protocol only: it writes the
/// label to the caller's pipe and answers with sealed memfds named with the
/// label (the test's tag, so that /proc/self/fd shows them).
struct RecorderFixture: RecorderService {
    func record(_ params: RecordParams, context: CallContext) async throws -> RecordResult {
        let bytes = Array(params.label.utf8)
        let raw = try #require(params.sink.rawValue)
        let written = write(raw, bytes, bytes.count)
        return RecordResult(copy: try OwnedFileDescriptor.sealedMemory(bytes, name: params.label), written: written)
    }

    func copies(_ params: CopiesParams, context: CallContext) async throws -> CopiesResult {
        for index in 0..<(params.count - 1) {
            try await sendCopiesPartial(try Self.copy(params.label, index), context: context)
        }
        return try Self.copy(params.label, params.count - 1)
    }

    static func copy(_ label: String, _ index: Int) throws -> CopiesResult {
        CopiesResult(copy: try OwnedFileDescriptor.sealedMemory(Array("\(label) \(index)".utf8), name: label), index: index)
    }
}

/// Generated clients and services with descriptors in params and results
/// (issue 26), through the in-process test daemon: what each side gets,
/// and that every descriptor is closed once the values holding it go.
@Suite struct GeneratedDescriptorCallTests {
    /// A tag for one test's memfds (suites run in parallel in this process).
    static func tag() -> String { "mediator-generated-fd-\(UInt64.random(in: 0...UInt64.max))" }

    static func openCount(_ tag: String) -> Int {
        LeakWatch.openTargets().filter { $0.contains(tag) }.count
    }

    /// Waits, bounded, until `condition` holds (the daemon's thread closes
    /// what it passed on a moment after the answer arrives).
    static func eventually(_ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        return condition()
    }

    /// Whether no write end of the pipe of `readEnd` is open anywhere in
    /// this process: poll reports POLLHUP.
    static func writersGone(_ readEnd: Int32) -> Bool {
        var entry = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1 && entry.revents & Int16(POLLHUP) != 0
    }

    static func withRecorder(_ body: (RecorderClient) async throws -> Void) async throws {
        try await withTestDaemon { daemon in
            try await daemon.serving(Component(serving: RecorderFixture())) {
                try await withMediatorClient(socketPath: daemon.socketPath, fds: true) { client in
                    try await body(RecorderClient(client))
                }
            }
        }
    }

    @Test func aPipeGoesInAndASealedMemfdComesBack() async throws {
        let tag = Self.tag()
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        try await Self.withRecorder { recorder in
            let sink = OwnedFileDescriptor(taking: ends[1])
            let result = try await recorder.record(RecordParams(label: tag, sink: sink))
            #expect(result.written == tag.utf8.count)
            var received = [UInt8](repeating: 0, count: tag.utf8.count)
            #expect(read(ends[0], &received, received.count) == received.count)
            #expect(String(decoding: received, as: UTF8.self) == tag, "the service wrote into the caller's pipe")
            #expect(result.copy.seals == OwnedFileDescriptor.immutableSeals, "the copy comes sealed")
            #expect(try MappedMemory(mapping: result.copy).bytes == Array(tag.utf8))
            sink.close()
        }
        // The service's copy of the write end, the daemon's, and the memfd
        // the client received: all closed once their values went.
        #expect(try await Self.eventually { Self.writersGone(ends[0]) }, "a write end of the pipe is still open")
        #expect(try await Self.eventually { Self.openCount(tag) == 0 }, "a memfd of the result is still open")
    }

    @Test func aStreamsPartialsCarryTheirOwnDescriptors() async throws {
        let tag = Self.tag()
        try await Self.withRecorder { recorder in
            var contents: [String] = []
            for try await item in recorder.copies(CopiesParams(count: 3, label: tag)) {
                #expect(item.index == contents.count)
                contents.append(String(decoding: try MappedMemory(mapping: item.copy).bytes, as: UTF8.self))
            }
            #expect(contents == ["\(tag) 0", "\(tag) 1", "\(tag) 2"])
        }
        #expect(try await Self.eventually { Self.openCount(tag) == 0 }, "a memfd of the stream is still open")
    }

    /// Params out of bounds are refused before anything is sent, and a
    /// client not made with `fds: true` cannot pass descriptors.
    @Test func refusalsComeBeforeSending() async throws {
        try await withTestDaemon { daemon in
            try await daemon.serving(Component(serving: RecorderFixture())) {
                let sink = try OwnedFileDescriptor(opening: "/dev/null", flags: O_WRONLY)
                try await withMediatorClient(socketPath: daemon.socketPath, fds: true) { client in
                    let error = await #expect(throws: MediatorError.self) {
                        _ = try await RecorderClient(client).record(RecordParams(label: String(repeating: "x", count: 201), sink: sink))
                    }
                    #expect(error?.code == .invalidParams)
                    var stream = RecorderClient(client).copies(CopiesParams(count: 9, label: "x")).makeAsyncIterator()
                    let streamError = await #expect(throws: MediatorError.self) { _ = try await stream.next() }
                    #expect(streamError?.code == .invalidParams)
                }
                try await daemon.withClient { client in
                    let error = await #expect(throws: MediatorError.self) {
                        _ = try await RecorderClient(client).record(RecordParams(label: "x", sink: sink))
                    }
                    #expect(error?.code == .fdsNotSupported)
                }
            }
        }
    }
}
