#if canImport(Glibc)
import Glibc
#endif
import MediatorSocket

/// An open file descriptor passed with a call or an answer (SCM_RIGHTS):
/// one that a handler or caller received, or one it hands over to send.
/// The value owns the descriptor: it is closed exactly once, by ``close()``
/// or when the last reference goes, unless ``take()`` hands the number
/// over first, so a descriptor that nobody wants is never leaked.
///
/// In JSON the descriptors of a message are the values `{"$fd": I}`, the
/// I-th descriptor sent with it; typed interfaces declare such a member
/// with `"format": "fd"` and generated code carries it as this type.
///
/// ```swift
/// let file = try OwnedFileDescriptor(opening: "/var/log/app.log")
/// ```
public final class OwnedFileDescriptor: Sendable, CustomStringConvertible {
    let owned: OwnedDescriptor

    /// Takes ownership of `rawValue`, an open descriptor: it is closed
    /// with this value unless ``take()`` gives it back.
    public init(taking rawValue: Int32) {
        owned = OwnedDescriptor(taking: rawValue)
    }

    init(_ owned: OwnedDescriptor) {
        self.owned = owned
    }

    /// A new descriptor (close-on-exec) for the same open file as
    /// `rawValue`, which stays the caller's.
    public convenience init(duplicating rawValue: Int32) throws(MediatorError) {
        let copy = fcntl(rawValue, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else {
            throw MediatorError(.invalidParams, "cannot duplicate descriptor \(rawValue): \(String(cString: strerror(errno)))")
        }
        self.init(taking: copy)
    }

    /// Opens `path` read-only (or with `flags`, close-on-exec always added).
    public convenience init(opening path: String, flags: Int32 = O_RDONLY, mode: mode_t = 0o600) throws(MediatorError) {
        let raw = open(path, flags | O_CLOEXEC, mode)
        guard raw >= 0 else {
            throw MediatorError(.invalidParams, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        self.init(taking: raw)
    }

    /// The descriptor's number while this value owns it; nil once taken or
    /// closed. Borrow it only while the value is alive.
    public var rawValue: Int32? { owned.rawValue }

    /// Gives up ownership: the caller must close the number returned; nil
    /// when already taken or closed.
    public func take() -> Int32? { owned.take() }

    /// Closes the descriptor now; closing a taken or closed value does nothing.
    public func close() {
        try? owned.close()
    }

    /// A new value (close-on-exec) for the same open file, owned separately.
    public func duplicate() throws(MediatorError) -> OwnedFileDescriptor {
        do {
            return OwnedFileDescriptor(try owned.duplicate())
        } catch {
            throw MediatorError(.invalidParams, "cannot duplicate \(owned): \(error)")
        }
    }

    public var description: String {
        rawValue.map { "OwnedFileDescriptor(\($0))" } ?? "OwnedFileDescriptor(closed)"
    }
}
