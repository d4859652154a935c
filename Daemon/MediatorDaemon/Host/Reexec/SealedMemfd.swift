#if canImport(Glibc)
import Glibc
#endif

/// The hand-over's bytes in a sealed memfd: written once by the old image,
/// read once by the new one, which cannot be handed a file it may change
/// under it (grow, shrink, write) once sealed.
enum SealedMemfd {
    /// The seals that fix the content: no grow, shrink or write, and no further seals.
    static let seals: Int32 = 0x0001 | 0x0002 | 0x0004 | 0x0008  // F_SEAL_SEAL | SHRINK | GROW | WRITE
    // linux/fcntl.h and linux/memfd.h: Glibc's Swift module lacks them (_GNU_SOURCE).
    private static let addSeals: Int32 = 1033
    private static let getSeals: Int32 = 1034
    private static let closeOnExecAllowingSeals: UInt32 = 0x0001 | 0x0002

    private typealias MemfdCreate = @convention(c) (UnsafePointer<CChar>, UInt32) -> Int32
    /// glibc's memfd_create (2.27 and later), looked up once: not exported to Swift either.
    private static let memfdCreate: MemfdCreate? = dlsym(nil, "memfd_create").map { unsafeBitCast($0, to: MemfdCreate.self) }

    /// A new memfd holding `bytes`, sealed; close-on-exec (the caller
    /// clears it for the one exec that passes it on).
    static func create(_ bytes: [UInt8], name: String) throws(ReexecError) -> Int32 {
        guard let memfdCreate else { throw .unavailable("this C library has no memfd_create") }
        let fd = memfdCreate(name, closeOnExecAllowingSeals)
        guard fd >= 0 else { throw .system("memfd_create", errno) }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let code = errno
                Glibc.close(fd)
                throw .system("write to the hand-over memfd", code)
            }
            written += count
        }
        guard fcntl(fd, addSeals, seals) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .system("F_ADD_SEALS", code)
        }
        return fd
    }

    /// The whole content of the memfd `fd`, refused unless it is sealed as
    /// ``create(_:name:)`` seals it, or larger than `limit`.
    static func read(_ fd: Int32, limit: Int) throws(ReexecError) -> [UInt8] {
        let present = fcntl(fd, getSeals)
        guard present >= 0, present & seals == seals else {
            throw .handOver("descriptor \(fd) is not a sealed memfd")
        }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw .system("fstat of the hand-over memfd", errno) }
        let size = Int(status.st_size)
        guard size <= limit else { throw .handOver("hand-over of \(size) bytes, over the limit of \(limit)") }
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let count = bytes[done...].withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(done)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw .system("read of the hand-over memfd", count < 0 ? errno : EIO) }
            done += count
        }
        return bytes
    }
}
