// FoundationEssentials, not Foundation: the daemon needs no ICU data
// (tens of MiB of mapped memory, docs/benchmark.md "Footprint").
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import MediatorProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Prepares the listening socket's path: creates its folder, removes a stale
/// socket left by a dead daemon, and refuses to take over a live one.
package enum SocketFile {
    package struct InUse: Error, CustomStringConvertible {
        package var path: String
        package var description: String { "another mediatord is answering on \(path); stop it first or pass --socket" }
    }

    /// The socket's folder (or a stale socket) cannot be made ready: one
    /// line with what, where and what to do.
    package struct PrepareFailure: Error, CustomStringConvertible {
        package var operation: String
        package var path: String
        package var errno: Int32
        package var description: String { SocketFile.failureText(operation, path, errno) }
    }

    package static func prepare(_ path: String) throws {
        let folder = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
        if !folder.isEmpty { try createFolders(folder) }
        guard FileManager.default.fileExists(atPath: path) else { return }
        if isAnswering(path) { throw InUse(path: path) }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw PrepareFailure(operation: "remove the stale socket", path: path, errno: errno)
        }
    }

    /// `mkdir -p`, with the folder that failed and why (FileManager's error
    /// is a raw CocoaError dump).
    static func createFolders(_ folder: String) throws(PrepareFailure) {
        var prefix = folder.hasPrefix("/") ? "" : "."
        for component in folder.split(separator: "/") {
            prefix += "/" + component
            var info = stat()
            if stat(prefix, &info) == 0 {
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    throw PrepareFailure(operation: "create", path: prefix, errno: ENOTDIR)
                }
                continue
            }
            // The process's umask applies, as it did with FileManager.
            guard mkdir(prefix, 0o777) == 0 || errno == EEXIST else {
                throw PrepareFailure(operation: "create", path: prefix, errno: errno)
            }
        }
    }

    /// `cannot OPERATION PATH: REASON; ADVICE`, the reason in lower case as
    /// in the rest of the daemon's messages.
    static func failureText(_ operation: String, _ path: String, _ code: Int32) -> String {
        let reason = String(cString: strerror(code)).lowercased()
        switch code {
        case EACCES, EPERM, EROFS:
            return "cannot \(operation) \(path): \(reason); run as root, use --user, or --socket PATH"
        case ENAMETOOLONG:
            return "cannot \(operation) \(path): \(reason); pass a shorter --socket PATH"
        default:
            return "cannot \(operation) \(path): \(reason); pass another --socket PATH"
        }
    }

    /// Whether something accepts connections on the socket at `path`.
    static func isAnswering(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0
    }

    static func setMode(_ path: String, _ mode: mode_t) {
        chmod(path, mode)
    }

    /// Sets the process's umask so that a file created now gets at most
    /// `mode`; returns the mask to restore. The umask is process-wide: only
    /// for the bind at start, before anything else creates files.
    static func restrictCreation(to mode: mode_t) -> mode_t {
        umask(~mode & 0o777)
    }

    static func restoreCreationMask(_ mask: mode_t) {
        umask(mask)
    }
}

extension SocketFile {
    /// Creating, binding or listening on the socket failed.
    package struct ListenFailure: Error, CustomStringConvertible {
        package var path: String
        package var operation: String
        package var errno: Int32
        package var description: String { SocketFile.failureText("\(operation) the socket", path, errno) }
    }

    /// A listening Unix stream socket bound at `path` (prepared with
    /// ``prepare(_:)``), created with at most `mode`: the umask is narrowed
    /// for the bind, then the mode is set exactly, and only then does the
    /// socket listen, so no peer ever meets another mode. Close-on-exec; the
    /// caller owns the descriptor (the daemon hands it to NIO, and keeps its
    /// number to accept peers it must refuse when out of descriptors).
    package static func listen(_ path: String, mode: mode_t, backlog: Int32) throws(ListenFailure) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ListenFailure(path: path, operation: "create", errno: errno) }
        func fail(_ operation: String, _ code: Int32) -> ListenFailure {
            close(fd)
            return ListenFailure(path: path, operation: operation, errno: code)
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw fail("bind", ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let previousMask = restrictCreation(to: mode)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        let bindErrno = errno
        restoreCreationMask(previousMask)
        guard bound == 0 else { throw fail("bind", bindErrno) }
        setMode(path, mode)
        guard Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            unlink(path)
            throw fail("listen on", code)
        }
        return fd
    }

    /// Removes the socket file the daemon created (NIO does not on close).
    package static func remove(_ path: String) {
        unlink(path)
    }
}

extension SocketFile {
    /// The path a listening Unix socket is bound to (for a socket-activated one).
    static func localPath(of fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }
}
