import Glibc
import MediatorSocket

/// memfd_create(2): glibc declares it only under `_GNU_SOURCE`, which
/// Swift's Glibc import leaves out.
@_silgen_name("memfd_create")
private func systemMemfdCreate(_ name: UnsafePointer<CChar>, _ flags: UInt32) -> Int32

/// The descriptors the clients send and read: memfds holding a short text
/// (a call's tag), so that the descriptor that comes back shows it is the
/// one that was meant.
enum TagMemfd {
    /// MFD_CLOEXEC.
    private static let closeOnExec: UInt32 = 1
    /// The most of a descriptor's content read back (tags are short).
    static let maxContent = 4096

    static func holding(_ text: String) throws -> OwnedDescriptor {
        let raw = systemMemfdCreate("mediator-chaos", closeOnExec)
        guard raw >= 0 else { throw ChaosFailure.sys("memfd_create") }
        let descriptor = OwnedDescriptor(taking: raw)
        let bytes = Array(text.utf8)
        guard write(raw, bytes, bytes.count) == bytes.count else { throw ChaosFailure.sys("write to a memfd") }
        return descriptor
    }

    /// What `descriptor` holds from its start (a memfd or a file), as text; nil when it cannot be read.
    static func contents(of descriptor: OwnedDescriptor) -> String? {
        guard let raw = descriptor.rawValue else { return nil }
        var buffer = [UInt8](repeating: 0, count: maxContent)
        let count = pread(raw, &buffer, buffer.count, 0)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }
}
