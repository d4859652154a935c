import Foundation
import MediatorClient
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// The Swift library's descriptors against the real mediatord. A
    /// mediatord that passes none answers `hello` without `max_fds`: the
    /// library then refuses descriptors itself, and calls without them
    /// work on the same connection. Once mediatord forwards them, the same
    /// test sends a memfd to a Swift component and gets one back.
    @Suite("MediatorClient library: descriptors")
    struct LibraryDescriptors {
        @Test("fds: true against mediatord: refused client-side without max_fds, else forwarded both ways")
        func descriptorsThroughMediatord() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let path = daemon.socketPath
            var component = Component(target: "Upper")
            component.socketPath = path
            component.acceptsDescriptors = true
            component.addDescriptorAction("upper") { context in
                let memory = try MappedMemory(mapping: try #require(context.descriptor(context.params["text"])))
                let text = String(decoding: memory.bytes, as: UTF8.self).uppercased()
                return MediatorReply(result: ["text": ["$fd": 0]], descriptors: [try OwnedFileDescriptor.sealedMemory(Array(text.utf8))])
            }
            component.addAction("ping") { _ in "pong" }
            let registered = AsyncStream.makeStream(of: Void.self)
            component.onRegistered = { registered.continuation.yield() }
            let running = Task { try await component.run() }
            defer { running.cancel() }
            _ = try await within("the component to register") { await registered.stream.first { _ in true } }

            let client = try await within("connect") { try await MediatorClient.connect(socketPath: path, fds: true) }
            let memfd = try OwnedFileDescriptor.sealedMemory(Array("hello".utf8))
            if client.maxDescriptorsPerMessage == 0 {
                let refused = await errorCode {
                    _ = try await within("a call with descriptors") {
                        try await client.call(target: "Upper", action: "upper", params: ["text": ["$fd": 0]], descriptors: [memfd])
                    }
                }
                #expect(refused == "fds_not_supported")
            } else {
                let reply = try await within("a call with descriptors") {
                    try await client.call(target: "Upper", action: "upper", params: ["text": ["$fd": 0]], descriptors: [memfd])
                }
                let answer = try #require(reply.descriptor(reply.result["text"]))
                #expect(String(decoding: try MappedMemory(mapping: answer).bytes, as: UTF8.self) == "HELLO")
            }
            let pong = try await within("a plain call on the same connection") { try await client.call(target: "Upper", action: "ping") }
            #expect(pong == "pong")
            await client.close()
        }
    }
}
