import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Reads SO_PEERCRED from an accepted Unix socket.
enum PeerCredentialsReader {
    /// Same layout as `struct ucred`, which Swift's Glibc import hides
    /// behind `_GNU_SOURCE`.
    struct UCred: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    static func read(_ channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(PeerCredentials(pid: 0, uid: UInt32.max, gid: UInt32.max))
        }
        let future: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        return future.map { PeerCredentials(pid: $0.pid, uid: $0.uid, gid: $0.gid) }
    }
}
