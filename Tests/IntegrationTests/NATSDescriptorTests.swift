import Foundation
import MediatorClient
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration.NATSBridge {
    /// Several MiB of deterministic bytes, so that each chunk of them differs.
    static func pattern(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 11)) }
    }

    /// FNV-1a of `bytes`: what a component on host B says it received.
    static func fnv(_ bytes: UnsafeRawBufferPointer) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int64(bitPattern: hash)
    }

    /// A component on host B that reads a memfd, makes one, or answers a pipe.
    static func blobsComponent(socketPath: String) -> Component {
        var component = Component(target: "Blobs")
        component.socketPath = socketPath
        component.acceptsDescriptors = true
        component.addDescriptorAction("digest") { context in
            let memory = try MappedMemory(mapping: try #require(context.descriptor(context.params["data"])))
            return MediatorReply(result: ["size": .int(Int64(memory.count)), "fnv": .int(memory.withUnsafeBytes(fnv))])
        }
        component.addDescriptorAction("make") { context in
            let size = Int(context.params["size"]?.intValue ?? 0)
            return MediatorReply(result: ["data": ["$fd": 0]], descriptors: [try OwnedFileDescriptor.sealedMemory(pattern(size))])
        }
        // A stream: the request's memfd back three times, each with the part's number appended.
        component.addDescriptorAction("parts") { context in
            let input = try MappedMemory(mapping: try #require(context.descriptor(context.params["data"]))).bytes
            for part in 0..<2 {
                await context.send(
                    partial: ["part": .int(Int64(part)), "data": ["$fd": 0]],
                    descriptors: [try OwnedFileDescriptor.sealedMemory(input + [UInt8(part)])])
            }
            return MediatorReply(result: ["part": 2, "data": ["$fd": 0]], descriptors: [try OwnedFileDescriptor.sealedMemory(input + [2])])
        }
        component.addDescriptorAction("pipe") { _ in
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { throw MediatorError(.internal, "pipe failed") }
            let (reader, writer) = (OwnedFileDescriptor(taking: ends[0]), OwnedFileDescriptor(taking: ends[1]))
            writer.close()
            return MediatorReply(result: ["data": ["$fd": 0]], descriptors: [reader])
        }
        return component
    }

    @Test("Sealed memfds cross hosts both ways as chunked bytes, in stream partials too; a pipe is refused fds_not_supported and closed; the bound per call")
    func sealedMemfdsAcrossHosts() async throws {
        let world = try World()
        defer { world.close() }
        let nats = try NATSServer(world)
        // Host A takes at most 16 MiB of descriptors' bytes per call.
        let a = try Self.host(world, nats, "hostA", ["--nats-import", "*", "--nats-max-fd-bytes", "16777216"])
        let b = try Self.host(world, nats, "hostB", ["--nats-export", "*"])

        var component = Self.blobsComponent(socketPath: b.socketPath)
        let registered = AsyncStream.makeStream(of: Void.self)
        component.onRegistered = { registered.continuation.yield() }
        let running = Task { [component] in try await component.run() }
        defer { running.cancel() }
        _ = try await within("the component on B to register") { await registered.stream.first { _ in true } }
        try a.waitForTarget("Blobs")
        let client = try await within("connect to A") { try await MediatorClient.connect(socketPath: a.socketPath, fds: true) }
        #expect(client.maxDescriptorsPerMessage > 0)

        // A's caller → B's component: 5 MiB, five times NATS's default max payload.
        let sent = Self.pattern(5 << 20 + 12345)
        let memfd = try OwnedFileDescriptor.sealedMemory(sent)
        let digest = try await within("a call with a memfd to host B", .seconds(30)) {
            try await client.call(target: "Blobs", action: "digest", params: ["data": ["$fd": 0]], descriptors: [memfd])
        }
        #expect(digest.result["size"]?.intValue == Int64(sent.count), "\(digest.result)")
        #expect(digest.result["fnv"]?.intValue == sent.withUnsafeBytes(Self.fnv), "\(digest.result)")

        // B's component → A's caller: a new sealed memfd with the same bytes.
        let size = 6 << 20 + 7
        let made = try await within("a memfd back from host B", .seconds(30)) {
            try await client.call(target: "Blobs", action: "make", params: ["size": .int(Int64(size))], descriptors: [])
        }
        let back = try #require(made.descriptor(made.result["data"]), "\(made.result)")
        #expect(back.seals.map { $0 & OwnedFileDescriptor.immutableSeals } == OwnedFileDescriptor.immutableSeals)
        #expect(try MappedMemory(mapping: back).bytes == Self.pattern(size))

        // A stream both ways: a memfd with the request, one with each partial and the final result.
        let streamed = Self.pattern(3 << 20)
        let streamedMemfd = try OwnedFileDescriptor.sealedMemory(streamed)
        let parts = try await within("a stream with memfds across hosts", .seconds(30)) {
            var parts: [(JSONValue, [UInt8])] = []
            for try await reply in client.stream(
                target: "Blobs", action: "parts", params: ["data": ["$fd": 0]], descriptors: [streamedMemfd])
            {
                let memfd = try #require(reply.descriptor(reply.result["data"]), "\(reply.result)")
                parts.append((reply.result["part"] ?? .null, try MappedMemory(mapping: memfd).bytes))
            }
            return parts.map { ($0.0, $0.1) }
        }
        #expect(parts.map(\.0) == [0, 1, 2])
        for (index, part) in parts.enumerated() {
            #expect(part.1 == streamed + [UInt8(index)], "part \(index): \(part.1.count) bytes")
        }

        // A pipe does not cross: refused before the call leaves A, and closed.
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let reader = OwnedFileDescriptor(taking: ends[0])
        let writer = OwnedFileDescriptor(taking: ends[1])
        var refusal: MediatorError?
        do {
            _ = try await within("a call with a pipe") {
                try await client.call(target: "Blobs", action: "digest", params: ["data": ["$fd": 0]], descriptors: [reader])
            }
        } catch let error as MediatorError {
            refusal = error
        }
        #expect(refusal?.code == .fdsNotSupported, "\(String(describing: refusal))")
        #expect(refusal?.message.contains("only sealed memfds cross hosts") == true, "\(String(describing: refusal))")
        // Once our own read end is closed, no copy is left anywhere: the write end reports POLLERR.
        reader.close()
        try waitUntil("every copy of the pipe's read end to be closed", within: .seconds(10)) {
            var poller = pollfd(fd: writer.rawValue ?? -1, events: Int16(POLLOUT), revents: 0)
            return poll(&poller, 1, 0) == 1 && poller.revents & Int16(POLLERR) != 0
        }

        // A pipe in B's result does not cross either.
        let answeredPipe = await errorCode {
            _ = try await within("a pipe back from host B") {
                try await client.call(target: "Blobs", action: "pipe", params: [:], descriptors: [])
            }
        }
        #expect(answeredPipe == "fds_not_supported")

        // Over A's bound: refused before anything is sent.
        let large = try OwnedFileDescriptor.sealedMemory(Self.pattern(17 << 20))
        let tooLarge = await errorCode {
            _ = try await within("a memfd over the bound") {
                try await client.call(target: "Blobs", action: "digest", params: ["data": ["$fd": 0]], descriptors: [large])
            }
        }
        #expect(tooLarge == "frame_too_large")
        await client.close()
    }
}
