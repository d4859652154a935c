import Testing

import MediatorSocket

#if canImport(Glibc)
import Glibc
#endif

/// Counts this process's open descriptors that point at the files a test
/// made, through /proc/self/fd. Other suites run in parallel in the same
/// process, so a test counts only its own files: memfds named with the
/// test's tag, and the sockets it asked to watch.
package final class LeakWatch {
    private let tag = "mediator-socket-test-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    private var watchedTargets: Set<String> = []

    /// A memfd holding `contents`, named with this watch's tag.
    package func memfd(_ contents: String = "") throws -> OwnedDescriptor {
        let raw = systemMemfdCreate(tag, memfdCloseOnExec)
        try #require(raw >= 0)
        let descriptor = OwnedDescriptor(taking: raw)
        let bytes = Array(contents.utf8)
        if !bytes.isEmpty { #expect(write(raw, bytes, bytes.count) == bytes.count) }
        return descriptor
    }

    /// Watches the sockets (both ends of a pair, say) for leaks too.
    package func watch(_ sockets: UnixStreamSocket...) throws {
        for socket in sockets {
            let raw = try #require(socket.descriptor.rawValue)
            watchedTargets.insert(try #require(Self.target(of: raw)))
        }
    }

    /// How many open descriptors point at this test's memfds and sockets.
    package var openCount: Int {
        Self.openTargets().filter { $0.contains(tag) || watchedTargets.contains($0) }.count
    }

    /// What every open descriptor points at (`socket:[inode]`, `/memfd:NAME (deleted)`).
    package static func openTargets() -> [String] {
        guard let directory = opendir("/proc/self/fd") else { return [] }
        defer { closedir(directory) }
        var targets: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let number = Int32(name), let target = target(of: number) else { continue }
            targets.append(target)
        }
        return targets
    }

    package static func target(of descriptor: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The contents of the file `descriptor` points at, from its start.
    package static func contents(of descriptor: OwnedDescriptor) throws -> String {
        let raw = try #require(descriptor.rawValue)
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = pread(raw, &buffer, buffer.count, 0)
        try #require(count >= 0)
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }
}

/// Runs `body` with a fresh watch, then checks that nothing it watched is
/// still open (the body's values are gone by then).
package func expectNoLeaks(_ body: (LeakWatch) throws -> Void) throws {
    let watch = LeakWatch()
    try body(watch)
    #expect(watch.openCount == 0, "descriptors left open")
}

/// A connected socket pair, both ends watched for leaks.
package func watchedPair(_ watch: LeakWatch) throws -> (UnixStreamSocket, UnixStreamSocket) {
    let (left, right) = try UnixStreamSocket.pair()
    try watch.watch(left, right)
    return (left, right)
}

extension UnixStreamSocket {
    /// Sends all of `text`, failing the test if the socket does not take it at once.
    package func sendAll(_ text: String, descriptors: [OwnedDescriptor] = []) throws {
        let bytes = Array(text.utf8)
        let outcome = try bytes.withUnsafeBytes { try send($0, descriptors: descriptors) }
        #expect(outcome == .sent(byteCount: bytes.count))
    }

    /// Receives into a buffer of `capacity` bytes; the bytes, the descriptors, and whether they were truncated.
    package func receiveOnce(capacity: Int = 4096, descriptorCapacity: Int = UnixStreamSocket.maxDescriptorsPerMessage)
        throws -> (bytes: [UInt8], descriptors: [OwnedDescriptor], truncated: Bool)?
    {
        var buffer = [UInt8](repeating: 0, count: capacity)
        let outcome = try buffer.withUnsafeMutableBytes { try receive(into: $0, descriptorCapacity: descriptorCapacity) }
        guard case .received(let count, let descriptors, let truncated) = outcome else { return nil }
        return (Array(buffer[0..<count]), descriptors, truncated)
    }

    /// Sets SO_SNDBUF (the kernel doubles it and keeps a minimum).
    package func setSendBuffer(_ bytes: Int32) throws {
        let raw = try #require(descriptor.rawValue)
        var value = bytes
        try #require(setsockopt(raw, SOL_SOCKET, SO_SNDBUF, &value, socklen_t(MemoryLayout<Int32>.size)) == 0)
    }
}

/// memfd_create(2) and MFD_CLOEXEC: glibc declares them only under
/// `_GNU_SOURCE`, which Swift's Glibc import leaves out.
@_silgen_name("memfd_create")
private func systemMemfdCreate(_ name: UnsafePointer<CChar>, _ flags: UInt32) -> Int32
private let memfdCloseOnExec: UInt32 = 1
