#if canImport(Glibc)
import Glibc
#endif
import MediatorProtocol

/// A private directory for one test daemon's socket, made with mkdtemp and
/// removed with its contents when the daemon is gone.
struct SocketDirectory {
    let path: String

    /// Under `$TMPDIR`, else /tmp; /tmp also when `$TMPDIR` is too long for
    /// a socket path (108 bytes on Linux, the last one a NUL).
    static func make() throws(MediatorError) -> SocketDirectory {
        let fallback = "/tmp"
        var parent = getenv("TMPDIR").map { String(cString: $0) } ?? fallback
        if parent.isEmpty || parent.utf8.count > maxParentBytes { parent = fallback }
        var template = Array((parent + "/mediator-test.XXXXXX").utf8CString)
        guard mkdtemp(&template) != nil else {
            throw MediatorError(.internal, "cannot make a directory in \(parent) for the test daemon's socket (errno \(errno))")
        }
        let bytes = template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return SocketDirectory(path: String(decoding: bytes, as: UTF8.self))
    }

    var socketPath: String { path + "/" + Self.socketName }

    func remove() {
        // The server removes its socket file on exit; this is in case it could not.
        unlink(socketPath)
        rmdir(path)
    }

    static let socketName = "mediator.sock"
    /// Room for "/mediator-test.XXXXXX/mediator.sock" and the NUL in sun_path.
    static let maxParentBytes = 107 - "/mediator-test.XXXXXX/".utf8.count - socketName.utf8.count
}
