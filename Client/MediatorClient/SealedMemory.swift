#if canImport(Glibc)
import Glibc
#endif
import MediatorProtocol

/// Bytes as a sealed memfd, for payloads over the frame limit (contract
/// section 8): the sender writes them into a memfd and seals it, the
/// receiver maps it read-only (``MappedMemory``). The Python package's
/// `memfd_from_bytes` and `read_memfd` do the same.
extension OwnedFileDescriptor {
    /// The seals that make a memfd's content immutable for every holder:
    /// F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE and F_SEAL_SEAL.
    public static let immutableSeals: Int32 = MemoryFileConstants.sealShrink | MemoryFileConstants.sealGrow
        | MemoryFileConstants.sealWrite | MemoryFileConstants.sealSeal

    /// A new memfd (close-on-exec) holding `bytes`, sealed so that nobody
    /// can change it (``immutableSeals``): safe to hand to a peer that must
    /// not trust the sender not to change it under it.
    ///
    /// - Parameters:
    ///   - bytes: the content.
    ///   - name: the memfd's name, shown in `/proc/PID/fd` (as
    ///     `memfd:NAME`); no meaning otherwise.
    /// - Throws: `internal` when the memfd cannot be made, written or sealed.
    public static func sealedMemory(_ bytes: UnsafeRawBufferPointer, name: String = "mediator") throws(MediatorError)
        -> OwnedFileDescriptor
    {
        let raw = try MemoryFileConstants.create(name)
        let descriptor = OwnedFileDescriptor(taking: raw)
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(raw, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw MediatorError(.internal, "cannot write the memfd: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
        guard fcntl(raw, MemoryFileConstants.addSeals, immutableSeals) == 0 else {
            throw MediatorError(.internal, "cannot seal the memfd: \(String(cString: strerror(errno)))")
        }
        return descriptor
    }

    /// ``sealedMemory(_:name:)-(UnsafeRawBufferPointer,_)`` of an array's bytes.
    public static func sealedMemory(_ bytes: [UInt8], name: String = "mediator") throws(MediatorError) -> OwnedFileDescriptor {
        let result: Result<OwnedFileDescriptor, MediatorError> = bytes.withUnsafeBytes { raw in
            Result { () throws(MediatorError) in try sealedMemory(raw, name: name) }
        }
        return try result.get()
    }

    /// The descriptor's seals (F_GET_SEALS); nil for a file that cannot be
    /// sealed (anything but a memfd made with sealing allowed) or a closed value.
    public var seals: Int32? {
        guard let raw = rawValue else { return nil }
        let seals = fcntl(raw, MemoryFileConstants.getSeals)
        return seals >= 0 ? seals : nil
    }
}

/// The content of a sealed memfd, mapped read-only; unmapped when the
/// value goes. The descriptor may be closed once it is mapped.
///
/// ```swift
/// let memory = try MappedMemory(mapping: reply.descriptors[0])
/// let text = memory.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
/// ```
public final class MappedMemory: @unchecked Sendable {
    // @unchecked: the mapping is read-only and immutable (the memfd is
    // sealed against writes, shrinking and growing) until deinit unmaps it.
    private let base: UnsafeRawPointer?
    /// The number of bytes mapped: the memfd's size.
    public let count: Int

    /// Maps `descriptor` read-only.
    ///
    /// - Throws: `invalid_params` unless it is a memfd sealed against
    ///   shrinking, growing and writing (else the sender could change it
    ///   under the reader, or shrink it and make reading the mapping fault
    ///   with SIGBUS); `internal` when it cannot be mapped.
    public init(mapping descriptor: OwnedFileDescriptor) throws(MediatorError) {
        guard let raw = descriptor.rawValue else {
            throw MediatorError(.invalidParams, "the descriptor is closed")
        }
        let needed = MemoryFileConstants.sealShrink | MemoryFileConstants.sealGrow | MemoryFileConstants.sealWrite
        guard let seals = descriptor.seals else {
            throw MediatorError(.invalidParams, "descriptor \(raw) is not a sealable memfd: \(String(cString: strerror(errno)))")
        }
        guard seals & needed == needed else {
            throw MediatorError(.invalidParams, "memfd \(raw) is not sealed against shrink, grow and write (seals \(seals))")
        }
        var status = stat()
        guard fstat(raw, &status) == 0 else {
            throw MediatorError(.internal, "cannot stat memfd \(raw): \(String(cString: strerror(errno)))")
        }
        count = Int(status.st_size)
        guard count > 0 else {
            base = nil
            return
        }
        let mapped = mmap(nil, count, PROT_READ, MAP_SHARED, raw, 0)
        guard let mapped, mapped != MAP_FAILED else {
            throw MediatorError(.internal, "cannot map memfd \(raw): \(String(cString: strerror(errno)))")
        }
        base = UnsafeRawPointer(mapped)
    }

    deinit {
        if let base { munmap(UnsafeMutableRawPointer(mutating: base), count) }
    }

    /// Runs `body` with the mapped bytes, valid during the call only.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// A copy of the bytes.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }
}

/// Linux's memfd and sealing constants and `memfd_create`, which Glibc's
/// Swift module does not export (they need _GNU_SOURCE): the values of
/// linux/memfd.h and linux/fcntl.h, as the Python package spells them too.
enum MemoryFileConstants {
    static let allowSealing: UInt32 = 0x0002
    static let closeOnExec: UInt32 = 0x0001
    static let addSeals: Int32 = 1033
    static let getSeals: Int32 = 1034
    static let sealSeal: Int32 = 0x0001
    static let sealShrink: Int32 = 0x0002
    static let sealGrow: Int32 = 0x0004
    static let sealWrite: Int32 = 0x0008

    private typealias MemfdCreate = @convention(c) (UnsafePointer<CChar>, UInt32) -> Int32

    /// glibc's memfd_create (2.27 and later), looked up once.
    private static let memfdCreate: MemfdCreate? = dlsym(nil, "memfd_create").map {
        unsafeBitCast($0, to: MemfdCreate.self)
    }

    /// A new memfd that allows sealing, close-on-exec.
    static func create(_ name: String) throws(MediatorError) -> Int32 {
        guard let memfdCreate else {
            throw MediatorError(.internal, "this C library has no memfd_create")
        }
        let raw = memfdCreate(name, closeOnExec | allowSealing)
        guard raw >= 0 else {
            throw MediatorError(.internal, "cannot make a memfd: \(String(cString: strerror(errno)))")
        }
        return raw
    }
}
