#if canImport(Glibc)
import Glibc
#endif

/// A listening, non-blocking Unix stream socket. ``accept()`` never
/// blocks: the caller waits for readability first.
package final class UnixListener: Sendable {
    package let descriptor: OwnedDescriptor

    private init(owning descriptor: OwnedDescriptor) {
        self.descriptor = descriptor
    }

    /// Binds a new socket at `path` and listens. The path must not exist;
    /// removing a stale socket file, the file's mode, and unlinking it at
    /// the end are the caller's (the daemon's SocketFile does them).
    package static func listen(path: String, backlog: Int32) throws(SocketError) -> UnixListener {
        let address = try UnixSocketAddress(path: path)
        let listener = try UnixListener(owning: UnixStreamSocket.newSocketDescriptor())
        let raw = try listener.descriptor.borrowedValue()
        guard address.withSocketAddress({ bind(raw, $0, $1) }) == 0 else { throw .system(.bind, errno: errno) }
        guard Glibc.listen(raw, backlog) == 0 else { throw .system(.listen, errno: errno) }
        return listener
    }

    /// Adopts a listening Unix stream socket, as socket activation passes
    /// (fd 3 and on), and makes it non-blocking.
    package convenience init(adopting descriptor: OwnedDescriptor) throws(SocketError) {
        let raw = try descriptor.borrowedValue()
        try UnixStreamSocket.requireUnixStream(raw)
        guard try UnixStreamSocket.integerOption(raw, SO_ACCEPTCONN) != 0 else {
            throw .notUnixStreamSocket(descriptor: raw)
        }
        try UnixStreamSocket.setNonBlocking(raw)
        self.init(owning: descriptor)
    }

    /// The next waiting connection (non-blocking, close-on-exec), or nil
    /// when none waits (EAGAIN). A connection the peer dropped before it
    /// was taken (ECONNABORTED) is skipped.
    package func accept() throws(SocketError) -> UnixStreamSocket? {
        let raw = try descriptor.borrowedValue()
        let flags = Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        while true {
            let accepted = systemAccept4(raw, nil, nil, flags)
            if accepted >= 0 { return UnixStreamSocket.accepted(accepted) }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EAGAIN, EWOULDBLOCK: return nil
            default: throw .system(.accept, errno: errno)
            }
        }
    }

    /// Closes the listener now rather than when the last reference goes.
    package func close() throws(SocketError) {
        try descriptor.close()
    }
}

/// accept4(2): glibc declares it only under `_GNU_SOURCE`, which Swift's
/// Glibc import leaves out. Plain accept then fcntl would leave a window
/// in which a child started by another thread inherits the connection.
@_silgen_name("accept4")
private func systemAccept4(
    _ socket: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: UnsafeMutablePointer<socklen_t>?, _ flags: Int32
) -> Int32
