#if canImport(Glibc)
import Glibc
#endif

/// Reads a whole small file with POSIX calls, at most a given size: what
/// manifests, policy files and interface files need, without Foundation's
/// FileHandle (the daemon links FoundationEssentials only), and mediatord's
/// config file.
package enum BoundedFile {
    package enum Failure: Error, Equatable {
        /// open(2) failed (the errno's text).
        case cannotOpen(String)
        /// read(2) failed.
        case cannotRead(String)
        /// More than `limit` bytes.
        case tooLarge
    }

    package static func read(_ path: String, limit: Int) -> Result<[UInt8], Failure> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(.cannotOpen(errorText(errno))) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(.cannotRead(errorText(errno)))
            }
            if count == 0 { return .success(bytes) }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit { return .failure(.tooLarge) }
        }
    }

    package static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }
}
