#if canImport(Glibc)
import Glibc
#endif

/// The system call a ``SocketError/system(_:errno:)`` failed in.
package enum SocketOperation: String, Sendable {
    case socket, socketpair, bind, listen, accept, connect, receive, send
    case getOption = "getsockopt", setOption = "setsockopt", fcntl, close, duplicate = "dup"
}

/// Why a socket operation failed; the errno of a failed system call is kept.
package enum SocketError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A system call failed.
    case system(SocketOperation, errno: Int32)
    /// The path does not fit `sockaddr_un` (at most `maximum` bytes).
    case pathTooLong(path: String, maximum: Int)
    /// An adopted descriptor is not a Unix stream socket (or, for a
    /// listener, not listening).
    case notUnixStreamSocket(descriptor: Int32)
    /// The ``OwnedDescriptor`` was already taken or closed.
    case descriptorReleased
    /// More descriptors for one message than Linux passes (``UnixStreamSocket/maxDescriptorsPerMessage``).
    case tooManyDescriptors(count: Int, maximum: Int)
    /// Descriptors must ride with at least one byte; a read needs room.
    case emptyBuffer

    /// Whether the peer is gone (a write after its close, or a reset).
    package var isPeerGone: Bool {
        switch self {
        case .system(_, let code): code == EPIPE || code == ECONNRESET
        default: false
        }
    }

    package var description: String {
        switch self {
        case .system(let operation, let code):
            "\(operation.rawValue) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .pathTooLong(let path, let maximum):
            "socket path \(path) is longer than \(maximum) bytes"
        case .notUnixStreamSocket(let descriptor):
            "descriptor \(descriptor) is not a Unix stream socket of the expected kind"
        case .descriptorReleased:
            "the descriptor was already taken or closed"
        case .tooManyDescriptors(let count, let maximum):
            "\(count) descriptors in one message; Linux passes at most \(maximum)"
        case .emptyBuffer:
            "an empty buffer can carry neither bytes nor descriptors"
        }
    }
}
