import Foundation
import MediatorProtocol
import MediatorSocket
import SocketTesting
import Testing

@testable import MediatorClient

/// Descriptors with calls and answers (contract section 8), against
/// ``DescriptorDaemon``: what arrives, in which order, and that nothing the
/// library received or sent stays open, whatever ends the call.
@Suite("Descriptors through the library") struct DescriptorTests {
    /// A tag for the memfds of one test: /proc/self/fd shows it in their
    /// names, so a test counts its own (suites run in parallel in this process).
    static func tag() -> String { "mediator-fd-test-\(UInt64.random(in: 0...UInt64.max))" }

    /// How many open descriptors point at memfds named with `tag`.
    static func openCount(_ tag: String) -> Int {
        LeakWatch.openTargets().filter { $0.contains(tag) }.count
    }

    /// Waits until no descriptor of `tag` is open (the daemon's thread
    /// closes what it received a moment after it answered), bounded.
    static func expectAllClosed(_ tag: String, _ comment: Comment) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while openCount(tag) > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(openCount(tag) == 0, comment)
    }

    static func memfd(_ tag: String, _ contents: String) throws -> OwnedFileDescriptor {
        try OwnedFileDescriptor.sealedMemory(Array(contents.utf8), name: tag)
    }

    /// The file a descriptor refers to: (st_dev, st_ino).
    static func identity(_ descriptor: OwnedFileDescriptor) throws -> [UInt64] {
        var status = stat()
        try #require(fstat(try #require(descriptor.rawValue), &status) == 0)
        return [UInt64(status.st_dev), UInt64(status.st_ino)]
    }

    static func contents(_ descriptor: OwnedFileDescriptor) throws -> String {
        String(decoding: try MappedMemory(mapping: descriptor).bytes, as: UTF8.self)
    }

    static func withDaemon(_ body: (DescriptorDaemon) async throws -> Void) async throws {
        let daemon = try DescriptorDaemon.start()
        do {
            try await body(daemon)
        } catch {
            try await daemon.shutdown()
            throw error
        }
        try await daemon.shutdown()
    }

    @Test func helloSaysFdsAndTheClientKeepsMaxFds() async throws {
        try await Self.withDaemon { daemon in
            let client = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            let plain = try await MediatorClient.connect(socketPath: daemon.path)
            #expect(client.maxDescriptorsPerMessage == daemon.maxFds)
            #expect(plain.maxDescriptorsPerMessage == 0)
            let hellos = try await daemon.received.wait(for: 2, "two hellos") { $0.message["action"] == "hello" }
            #expect(hellos.filter { $0.message["params"]?["fds"] == .bool(true) }.count == 1)
            #expect(hellos.filter { $0.message["params"]?["fds"] == nil }.count == 1)
            await client.close()
            await plain.close()
        }
    }

    @Test func descriptorsArriveInOrderAndReferToTheSameFiles() async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            let client = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            let files = try (0..<3).map { try Self.memfd(tag, "file \($0)") }
            var context = DescriptorList()
            let params: JSONValue = [
                "third": context.reference(files[2]), "first": context.reference(files[0]),
                "again": context.reference(files[2]), "second": context.reference(files[1]),
            ]
            #expect(context.descriptors.count == 3, "a descriptor referenced twice is sent once")
            let reply = try await client.call(target: "Fake", action: "echo", params: params, descriptors: context.descriptors)
            try #require(reply.descriptors.count == 3)
            #expect(reply.result == params)
            for (name, file) in [("first", files[0]), ("second", files[1]), ("third", files[2])] {
                let received = try #require(reply.descriptor(reply.result[name]))
                #expect(try Self.identity(received) == Self.identity(file), "\(name)")
                #expect(received.rawValue != file.rawValue, "a new descriptor for the same file")
            }
            #expect(try Self.contents(reply.descriptors[0]) == "file 2")
            let request = try await daemon.received.first("the request") { $0.message["action"] == "echo" }
            #expect(request.message["fds"] == 3)
            #expect(request.descriptorCount == 3)
            await client.close()
        }
        try await Self.expectAllClosed(tag, "descriptors left open after the replies and files went")
    }

    @Test func sendingWithoutFdsIsRefusedBeforeAnythingIsSent() async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            let client = try await MediatorClient.connect(socketPath: daemon.path)
            let file = try Self.memfd(tag, "x")
            let error = await mediatorError {
                try await client.call(target: "Fake", action: "echo", params: ["f": ["$fd": 0]], descriptors: [file])
            }
            #expect(error?.code == .fdsNotSupported)
            #expect(error?.delivered == .no)
            let fdsClient = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            let outOfRange = await mediatorError {
                try await fdsClient.call(target: "Fake", action: "echo", params: ["f": ["$fd": 1]], descriptors: [file])
            }
            #expect(outOfRange?.code == .badRequest)
            let tooMany = try (0...daemon.maxFds).map { _ in try file.duplicate() }
            let overLimit = await mediatorError {
                try await fdsClient.call(target: "Fake", action: "echo", descriptors: tooMany)
            }
            #expect(overLimit?.code == .invalidParams)
            #expect(!daemon.received.items.contains { $0.message["action"] == "echo" })
            await client.close()
            await fdsClient.close()
        }
        try await Self.expectAllClosed(tag, "a refused call left descriptors open")
    }

    @Test func descriptorsForAClientThatDidNotAskAreClosedAndTheCallFails() async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            let client = try await MediatorClient.connect(socketPath: daemon.path)
            let error = await mediatorError { try await client.call(target: "Fake", action: "give", params: ["tag": .string(tag)]) }
            #expect(error?.code == .fdsNotSupported)
            // A plain call on a connection that takes descriptors does not take them either.
            let fdsClient = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            let plainCall = await mediatorError { try await fdsClient.call(target: "Fake", action: "give", params: ["tag": .string(tag)]) }
            #expect(plainCall?.code == .fdsNotSupported)
            _ = try await client.call(target: "Fake", action: "echo")
            await client.close()
            await fdsClient.close()
        }
        try await Self.expectAllClosed(tag, "refused descriptors were not closed")
    }

    @Test(arguments: ["extra", "fewer"])
    func aReplyWithOtherDescriptorsThanDeclaredFailsThatCallOnly(action: String) async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            let client = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            let files = try (0..<2).map { try Self.memfd(tag, "m\($0)") }
            let error = await mediatorError {
                try await client.call(target: "Fake", action: action, params: ["a": ["$fd": 0]], descriptors: files)
            }
            #expect(error?.code == .badRequest, "\(String(describing: error))")
            // The connection goes on: the next call gets its own descriptors.
            let reply = try await client.call(target: "Fake", action: "echo", params: ["a": ["$fd": 0]], descriptors: [files[1]])
            #expect(try Self.identity(try #require(reply.descriptors.first)) == Self.identity(files[1]))
            await client.close()
        }
        try await Self.expectAllClosed(tag, "a mismatched reply left descriptors open")
    }

    /// A malformed response's descriptors are closed with it, not left
    /// for the next line of the same read to take.
    @Test func aMalformedResponsesDescriptorsDoNotPassToTheNextLine() async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            let client = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            let error = await mediatorError {
                try await client.call(target: "Fake", action: "smuggle", descriptors: [try Self.memfd(tag, "smuggled")])
            }
            #expect(error?.code == .badRequest, "\(String(describing: error))")
            await client.close()
        }
        try await Self.expectAllClosed(tag, "the malformed response's descriptor was left open")
    }

    @Test func aStreamsPartialsCarryDescriptors() async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            let client = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            var contents: [String] = []
            for try await item in client.stream(
                target: "Fake", action: "stream", params: ["count": 3, "tag": .string(tag)], descriptors: [])
            {
                if let file = item.descriptor(item.result["file"]) { contents.append(try Self.contents(file)) }
            }
            #expect(contents == ["partial 0", "partial 1", "partial 2"])
            await client.close()
        }
        try await Self.expectAllClosed(tag, "a stream's descriptors were left open")
    }

    /// A reply that comes after its call gave up (timeout, cancellation)
    /// has its descriptors closed.
    @Test(arguments: ["timeout", "cancel"])
    func aLateReplysDescriptorsAreClosed(ending: String) async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            let client = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            let file = try Self.memfd(tag, "late")
            let delay: Int64 = ending == "timeout" ? 1600 : 300
            let call = Task {
                await mediatorError {
                    try await client.call(
                        target: "Fake", action: "late", params: ["delay_ms": .int(delay), "f": ["$fd": 0]],
                        descriptors: [file], timeout: .milliseconds(100))
                }
            }
            if ending == "cancel" {
                _ = try await daemon.received.first("the late call") { $0.message["action"] == "late" }
                call.cancel()
            }
            let error = await call.value
            #expect(error?.code == (ending == "timeout" ? .timeout : .cancelled))
            _ = try await daemon.notes.first(timeout: 10, "the late reply") { $0 == "late sent" }
            // Read in order: once this answer is back, the late one was handled.
            _ = try await client.call(target: "Fake", action: "echo")
            file.close()
            await client.close()
        }
        try await Self.expectAllClosed(tag, "the late reply's descriptors were left open")
    }

    @Test func aLostConnectionClosesWhatWasInFlight() async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            let client = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            let file = try Self.memfd(tag, "lost")
            let waiting = Task {
                await mediatorError {
                    try await client.call(target: "Fake", action: "late", params: ["delay_ms": 60000], descriptors: [file])
                }
            }
            _ = try await daemon.received.first("the call in flight") { $0.message["action"] == "late" }
            let error = await mediatorError {
                try await client.call(target: "Fake", action: "hangUp", descriptors: [file])
            }
            #expect(error?.code == .disconnected)
            #expect(await waiting.value?.code == .disconnected)
            file.close()
        }
        try await Self.expectAllClosed(tag, "descriptors of a lost connection were left open")
    }

    /// A Swift component that takes descriptors, through the fake daemon:
    /// the request's descriptors reach the handler, the reply's reach the
    /// caller, and a sealed memfd of several MiB goes both ways.
    @Test func aComponentReceivesAndAnswersWithDescriptors() async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            var component = Component(target: "Files")
            component.socketPath = daemon.path
            component.acceptsDescriptors = true
            component.addDescriptorAction("reverse") { context in
                // Answers the request's descriptors in reverse order, and a
                // memfd with the reversed bytes of the first.
                let memory = try MappedMemory(mapping: try #require(context.descriptors.first))
                let reversed = try OwnedFileDescriptor.sealedMemory(memory.bytes.reversed(), name: tag)
                var encoding = DescriptorList()
                let echoed = context.descriptors.reversed().map { encoding.reference($0) }
                return MediatorReply(
                    result: ["echoed": .array(echoed), "reversed": encoding.reference(reversed), "count": .int(Int64(context.descriptors.count))],
                    descriptors: encoding.descriptors)
            }
            let running = Task { try await component.run() }
            defer { running.cancel() }
            _ = try await daemon.received.first("the registration") { $0.message["action"] == "register" }
            let client = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            let payload = (0..<(6 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 13) }
            let big = try OwnedFileDescriptor.sealedMemory(payload, name: tag)
            #expect(big.seals.map { $0 & OwnedFileDescriptor.immutableSeals } == OwnedFileDescriptor.immutableSeals)
            let small = try Self.memfd(tag, "small")
            let reply = try await client.call(
                target: "Files", action: "reverse", params: ["big": ["$fd": 0], "small": ["$fd": 1]], descriptors: [big, small])
            #expect(reply.result["count"] == 2)
            let echoed = try #require(reply.result["echoed"]?.arrayValue)
            #expect(try echoed.map { try Self.identity(try #require(reply.descriptor($0))) } == [Self.identity(small), Self.identity(big)])
            let reversed = try MappedMemory(mapping: try #require(reply.descriptor(reply.result["reversed"])))
            #expect(reversed.count == payload.count)
            #expect(reversed.withUnsafeBytes { $0.elementsEqual(payload.reversed()) })
            await client.close()
        }
        try await Self.expectAllClosed(tag, "the component or the caller left descriptors open")
    }

    /// A component's partials carry descriptors
    /// (``CallContext/send(partial:descriptors:)``), each reaching the
    /// caller's stream with its own.
    @Test func aComponentsPartialsCarryDescriptors() async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            var component = Component(target: "Ticks")
            component.socketPath = daemon.path
            component.acceptsDescriptors = true
            component.addAction("ticks") { context in
                for index in 0..<3 {
                    let file = try OwnedFileDescriptor.sealedMemory(Array("tick \(index)".utf8), name: tag)
                    await context.send(partial: ["tick": ["$fd": 0]], descriptors: [file])
                }
                return ["done": true]
            }
            let running = Task { try await component.run() }
            defer { running.cancel() }
            _ = try await daemon.received.first("the registration") { $0.message["action"] == "register" }
            let client = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            var items: [String] = []
            for try await item in client.stream(target: "Ticks", action: "ticks", descriptors: []) {
                if let file = item.descriptor(item.result["tick"]) {
                    items.append(try Self.contents(file))
                } else {
                    items.append(item.result.jsonText)
                }
            }
            #expect(items == ["tick 0", "tick 1", "tick 2", #"{"done":true}"#])
            await client.close()
        }
        try await Self.expectAllClosed(tag, "a partial's descriptors were left open")
    }

    /// The Python package as the caller of a Swift component, through the
    /// fake daemon: a sealed memfd from `memfd_from_bytes` reaches the
    /// handler, and the memfd it answers reads back in Python.
    @Test func aPythonCallerAndASwiftComponentPassMemfds() async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            var component = Component(target: "Files")
            component.socketPath = daemon.path
            component.acceptsDescriptors = true
            component.addDescriptorAction("upper") { context in
                let text = String(decoding: try MappedMemory(mapping: try #require(context.descriptor(context.params["text"]))).bytes, as: UTF8.self)
                let answer = try OwnedFileDescriptor.sealedMemory(Array(text.uppercased().utf8), name: tag)
                return MediatorReply(result: ["text": ["$fd": 0], "from": .string(text)], descriptors: [answer])
            }
            let running = Task { try await component.run() }
            defer { running.cancel() }
            _ = try await daemon.received.first("the registration") { $0.message["action"] == "register" }
            let script = """
                import json, sys
                import mediator
                client = mediator.connect(socket=sys.argv[1], fds=True)
                sent = mediator.memfd_from_bytes(b"hello from python")
                result = client.call("Files", "upper", {"text": mediator.FD(sent, close=True)})
                with result["text"] as answer:
                    print(json.dumps({"text": bytes(mediator.read_memfd(answer)).decode(), "from": result["from"]}))
                client.close()
                """
            let output = try await Self.runPython(script, arguments: [daemon.path])
            #expect(output == #"{"text": "HELLO FROM PYTHON", "from": "hello from python"}"#)
        }
        try await Self.expectAllClosed(tag, "the component left descriptors open")
    }

    /// The Python package as a component called by the Swift library,
    /// through the fake daemon: the Swift caller's memfd reaches the
    /// Python handler, and the memfd it returns (`mediator.FD`) reads back
    /// in Swift.
    @Test func aSwiftCallerAndAPythonComponentPassMemfds() async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            let script = """
                import sys
                import mediator
                service = mediator.Service("PyFiles")
                @service.action("lower")
                def lower(params, ctx):
                    with params["text"] as received:
                        text = bytes(mediator.read_memfd(received)).decode()
                    return {"text": mediator.FD(mediator.memfd_from_bytes(text.lower().encode()), close=True), "from": text}
                service.run(socket=sys.argv[1], fds=True, reconnect=False)
                """
            let component = try Self.startPython(script, arguments: [daemon.path])
            // SIGKILL: the package answers SIGTERM by leaving gracefully,
            // and without reconnect it also ends when the daemon goes.
            defer { kill(component.processIdentifier, SIGKILL) }
            _ = try await daemon.received.first(timeout: 30, "the Python component's registration") {
                $0.message["action"] == "register" && $0.message["params"]?["target"] == "PyFiles"
            }
            let client = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            let reply = try await client.call(
                target: "PyFiles", action: "lower", params: ["text": ["$fd": 0]], descriptors: [try Self.memfd(tag, "Hello From Swift")])
            #expect(reply.result["from"] == "Hello From Swift")
            let answer = try #require(reply.descriptor(reply.result["text"]))
            #expect(try Self.contents(answer) == "hello from swift")
            #expect(answer.seals.map { $0 & OwnedFileDescriptor.immutableSeals } == OwnedFileDescriptor.immutableSeals)
            await client.close()
        }
        try await Self.expectAllClosed(tag, "the caller's memfd was left open")
    }

    /// A python3 process running `script` with the repository's `python/` package.
    static func startPython(_ script: String, arguments: [String], output: Pipe? = nil) throws -> Process {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        process.environment = ["PYTHONPATH": repository.appendingPathComponent("python").path, "PATH": "/usr/bin:/bin"]
        if let output { process.standardOutput = output }
        try process.run()
        return process
    }

    /// Runs `script` with python3 and the repository's `python/` package;
    /// its standard output, trimmed. Bounded: 30 s.
    static func runPython(_ script: String, arguments: [String]) async throws -> String {
        let output = Pipe()
        let ended = Mailbox<Int32>()
        let process = try startPython(script, arguments: arguments, output: output)
        process.terminationHandler = { ended.post($0.terminationStatus) }
        if !process.isRunning { ended.post(process.terminationStatus) }
        let status = try await ended.first(timeout: 30, "python3") { _ in true }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        try #require(status == 0, "python3 exited with \(status): \(text)")
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aComponentThatDoesNotAcceptDescriptorsRefusesThem() async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            var component = Component(target: "Plain")
            component.socketPath = daemon.path
            component.addAction("echo") { context in context.params }
            let running = Task { try await component.run() }
            defer { running.cancel() }
            _ = try await daemon.received.first("the registration") { $0.message["action"] == "register" }
            let client = try await MediatorClient.connect(socketPath: daemon.path, fds: true)
            // The fake daemon forwards what the real one would refuse: the
            // component's library refuses it too.
            let error = await mediatorError {
                try await client.call(target: "Plain", action: "echo", params: ["f": ["$fd": 0]], descriptors: [try Self.memfd(tag, "x")])
            }
            #expect(error?.code == .badRequest || error?.code == .fdsNotSupported, "\(String(describing: error))")
            await client.close()
        }
        try await Self.expectAllClosed(tag, "refused descriptors were left open")
    }

    /// A session made with `fds: true` says so on its connection and
    /// passes descriptors; one made without refuses them client-side.
    @Test func aSessionPassesDescriptors() async throws {
        let tag = Self.tag()
        try await Self.withDaemon { daemon in
            let session = MediatorSession(socketPath: daemon.path, fds: true)
            let plain = MediatorSession(socketPath: daemon.path)
            let running = [Task { await session.run() }, Task { await plain.run() }]
            defer { for task in running { task.cancel() } }
            let file = try Self.memfd(tag, "session")
            let reply = try await session.call(
                target: "Fake", action: "echo", params: ["f": ["$fd": 0]], descriptors: [file], timeout: .seconds(5))
            #expect(try Self.identity(try #require(reply.descriptor(reply.result["f"]))) == Self.identity(file))
            let refused = await mediatorError {
                try await plain.call(target: "Fake", action: "echo", params: ["f": ["$fd": 0]], descriptors: [file], timeout: .seconds(5))
            }
            #expect(refused?.code == .fdsNotSupported)
            for task in running { task.cancel() }
            for task in running { await task.value }
        }
        try await Self.expectAllClosed(tag, "a session's descriptors were left open")
    }

    @Test func sealedMemoryIsImmutableAndMappedReadOnly() throws {
        let file = try OwnedFileDescriptor.sealedMemory(Array("sealed".utf8))
        let raw = try #require(file.rawValue)
        #expect(write(raw, "x", 1) < 0, "a sealed memfd takes no writes")
        #expect(ftruncate(raw, 0) != 0, "nor shrinks")
        #expect(String(decoding: try MappedMemory(mapping: file).bytes, as: UTF8.self) == "sealed")
        #expect(try MappedMemory(mapping: try OwnedFileDescriptor.sealedMemory([])).count == 0)
        let unsealed = try OwnedFileDescriptor(opening: "/proc/self/status")
        #expect(throws: MediatorError.self) { try MappedMemory(mapping: unsealed) }
    }

    @Test func aDescriptorListNumbersDescriptorsOnce() throws {
        let first = try OwnedFileDescriptor(opening: "/dev/null")
        let second = try OwnedFileDescriptor(opening: "/dev/null")
        var list = DescriptorList()
        #expect(list.reference(first) == ["$fd": 0])
        #expect(list.reference(second) == ["$fd": 1])
        #expect(list.index(of: first) == 0)
        #expect(list.descriptors.count == 2)
        #expect(DescriptorList.referencedIndex(["$fd": 1]) == 1)
        #expect(DescriptorList.referencedIndex(["$fd": 1, "other": 2]) == nil)
        #expect(DescriptorList.referencedIndex(["$fd": -1]) == nil)
        let reply = MediatorReply(result: ["f": ["$fd": 1]], descriptors: list.descriptors)
        #expect(reply.descriptor(reply.result["f"]) === second)
        #expect(reply.descriptor(["$fd": 2]) == nil)
        #expect(OutboundMessage.declaringDescriptors(2, in: Array("{\"id\":1}\n".utf8)) == Array("{\"fds\":2,\"id\":1}\n".utf8))
        #expect(OutboundMessage.declaringDescriptors(0, in: Array("{}\n".utf8)) == Array("{}\n".utf8))
    }
}
