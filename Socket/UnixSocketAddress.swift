#if canImport(Glibc)
import Glibc
#endif

/// A filesystem path as a `sockaddr_un`.
struct UnixSocketAddress {
    private var address = sockaddr_un()

    /// The longest path that fits, without the terminating NUL.
    static let maxPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    init(path: String) throws(SocketError) {
        let bytes = Array(path.utf8)
        guard bytes.count <= Self.maxPathBytes else {
            throw .pathTooLong(path: path, maximum: Self.maxPathBytes)
        }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
    }

    /// Calls `body` with the address as the sockets API takes it.
    func withSocketAddress<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }
}
