import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An open file descriptor that this value owns: it is closed exactly once,
/// by ``close()`` or when the last reference goes, unless ``take()`` hands
/// the number over to someone else first.
///
/// A final class rather than a `~Copyable` struct: descriptors travel in
/// arrays (a message's `fds`), in queues and across tasks, which
/// noncopyable values cannot do today. The state is one atomic, so the
/// handle is `Sendable` and a take or close races safely with another;
/// using ``rawValue`` while another task closes it is the caller's error,
/// as with any descriptor number.
package final class OwnedDescriptor: Sendable, CustomStringConvertible {
    /// The descriptor, or -1 once taken or closed.
    private let state: Atomic<Int32>

    /// Takes ownership of `rawValue`, an open descriptor.
    package init(taking rawValue: Int32) {
        state = Atomic(rawValue)
    }

    deinit {
        let raw = state.load(ordering: .acquiring)
        if raw >= 0 { Glibc.close(raw) }
    }

    /// The descriptor's number while this handle owns it.
    package var rawValue: Int32? {
        let raw = state.load(ordering: .acquiring)
        return raw >= 0 ? raw : nil
    }

    /// The number, for a call that only borrows it.
    func borrowedValue() throws(SocketError) -> Int32 {
        guard let raw = rawValue else { throw .descriptorReleased }
        return raw
    }

    /// Gives up ownership: the caller must close the number returned. Nil
    /// when already taken or closed.
    package func take() -> Int32? {
        let raw = state.exchange(-1, ordering: .acquiringAndReleasing)
        return raw >= 0 ? raw : nil
    }

    /// Closes the descriptor now. Closing a taken or closed handle does
    /// nothing. On Linux the number is released even when close reports an
    /// error (EINTR, EIO), so there is no retry.
    package func close() throws(SocketError) {
        let raw = state.exchange(-1, ordering: .acquiringAndReleasing)
        guard raw >= 0 else { return }
        if Glibc.close(raw) != 0 { throw .system(.close, errno: errno) }
    }

    /// A new descriptor (close-on-exec) for the same open file.
    package func duplicate() throws(SocketError) -> OwnedDescriptor {
        let raw = try borrowedValue()
        let copy = fcntl(raw, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw .system(.duplicate, errno: errno) }
        return OwnedDescriptor(taking: copy)
    }

    package var description: String {
        rawValue.map { "OwnedDescriptor(\($0))" } ?? "OwnedDescriptor(released)"
    }
}
