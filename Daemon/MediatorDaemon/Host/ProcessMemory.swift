#if canImport(Glibc)
import Glibc
#endif

/// The daemon's own memory: how much is resident, and giving malloc's free
/// pages back to the system after a burst.
package enum ProcessMemory {
    /// Resident bytes (the second field of /proc/self/statm, in pages); nil where it cannot be read.
    static func residentBytes() -> Int? {
        let fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 128)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let fields = bytes[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count >= 2, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// glibc's `malloc_trim(0)`: returns free memory at the top of the heap
    /// and free pages inside it. `<malloc.h>` is not part of Swift's Glibc
    /// module, so it is looked up once by name; false where it is missing.
    @discardableResult
    package static func trimMalloc() -> Bool {
        guard let trim = mallocTrim else { return false }
        return trim(0) == 1
    }

    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()
}
