#if canImport(Glibc)
import Glibc
#endif
import MediatorClient
import Testing

@testable import mediatorctl

/// How the content of a received descriptor is read (no daemon needed).
@Suite struct ReceivedDescriptorsTests {
    /// Everything `copy` gives its sink, and how it ended.
    func content(_ descriptor: OwnedFileDescriptor) -> (ReceivedDescriptors.Copy, [UInt8]) {
        var bytes: [UInt8] = []
        let outcome = ReceivedDescriptors.copy(descriptor) { chunk in
            bytes.append(contentsOf: chunk)
            return .written
        }
        return (outcome, bytes)
    }

    @Test("A sealed memfd is read whole, across chunks")
    func sealedMemfd() throws {
        let data = (0..<(ReceivedDescriptors.chunkBytes * 2 + 7)).map { UInt8($0 % 251) }
        let (outcome, bytes) = content(try OwnedFileDescriptor.sealedMemory(data))
        #expect(outcome == .written)
        #expect(bytes == data)
    }

    @Test("A regular file is read from its start, whatever its offset")
    func regularFileFromStart() throws {
        var template = Array("/tmp/mediatorctl-test-XXXXXX".utf8CString)
        let raw = mkstemp(&template)
        try #require(raw >= 0)
        unlink(String(cString: template))
        let file = OwnedFileDescriptor(taking: raw)
        #expect(write(raw, "written first", 13) == 13)  // the offset is now at the end
        let (outcome, bytes) = content(file)
        #expect(outcome == .written)
        #expect(String(decoding: bytes, as: UTF8.self) == "written first")
    }

    @Test("A pipe is read to its end; a directory is skipped; a refusing sink stops the copy")
    func pipeDirectoryAndRefusal() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let reader = OwnedFileDescriptor(taking: ends[0])
        #expect(write(ends[1], "through a pipe", 14) == 14)
        close(ends[1])
        let (outcome, bytes) = content(reader)
        #expect(outcome == .written)
        #expect(String(decoding: bytes, as: UTF8.self) == "through a pipe")

        let directory = try OwnedFileDescriptor(opening: "/tmp", flags: O_RDONLY | O_DIRECTORY)
        #expect(content(directory) == (.skipped("a directory"), []))
        #expect(ReceivedDescriptors.linkTarget(directory) == "/tmp")

        let refused = ReceivedDescriptors.copy(try OwnedFileDescriptor.sealedMemory(Array("x".utf8))) { _ in .refused("no") }
        #expect(refused == .refused("no"))
    }
}
