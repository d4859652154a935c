import MediatorConfiguration
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Reads a peer's credentials from an accepted Unix socket.
enum PeerCredentialsReader {
    /// Same layout as `struct ucred`, which Swift's Glibc import hides
    /// behind `_GNU_SOURCE`.
    struct UCred: Sendable {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    /// SO_PEERGROUPS is not in Glibc's Swift import.
    static let peerGroupsOption: Int32 = 59
    /// Room for this many supplementary groups (NGROUPS_MAX is 65536, but
    /// more than a few dozen is rare); more gives an error and no groups.
    static let maxGroups = 256

    static func read(_ channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(PeerCredentials(pid: 0, uid: UInt32.max, gid: UInt32.max))
        }
        let credentials: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        let groups: EventLoopFuture<InlineArray<256, UInt32>> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(peerGroupsOption))
        return credentials.and(groups.map(Optional.some).recover { _ in nil }).map { credentials, groups in
            PeerCredentials(
                pid: credentials.pid, uid: credentials.uid, gid: credentials.gid,
                groups: groups.map(trimmedGroups) ?? [], executable: executable(of: credentials.pid),
                userName: SystemAccounts().userName(credentials.uid))
        }
    }

    /// The same from a connected socket's descriptor (the daemon's own
    /// sockets, read with recvmsg); uid and gid max when the kernel says nothing.
    static func read(socket raw: Int32) -> PeerCredentials {
        var credentials = UCred(pid: 0, uid: UInt32.max, gid: UInt32.max)
        var length = socklen_t(MemoryLayout<UCred>.size)
        guard getsockopt(raw, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else {
            return PeerCredentials(pid: 0, uid: UInt32.max, gid: UInt32.max)
        }
        var groups = [UInt32](repeating: 0, count: maxGroups)
        var groupsLength = socklen_t(maxGroups * MemoryLayout<UInt32>.size)
        let read = groups.withUnsafeMutableBytes { getsockopt(raw, SOL_SOCKET, peerGroupsOption, $0.baseAddress, &groupsLength) }
        let count = read == 0 ? Int(groupsLength) / MemoryLayout<UInt32>.size : 0
        return PeerCredentials(
            pid: credentials.pid, uid: credentials.uid, gid: credentials.gid, groups: Array(groups.prefix(count)).sorted(),
            executable: executable(of: credentials.pid), userName: SystemAccounts().userName(credentials.uid))
    }

    /// NIO zero-fills the buffer and does not return the length the kernel
    /// wrote; the kernel keeps a process's groups sorted, so the list ends at
    /// the last non-zero entry. (Group 0 alone, with no other group, reads as
    /// no supplementary group; root's primary group is reported anyway.)
    static func trimmedGroups(_ raw: InlineArray<256, UInt32>) -> [UInt32] {
        var last = -1
        for index in raw.indices where raw[index] != 0 { last = index }
        guard last >= 0 else { return [] }
        return (0...last).map { raw[$0] }
    }

    /// The peer's executable, when this process may read `/proc/PID/exe`
    /// (root, or the same user; not under `ProtectProc=invisible`).
    static func executable(of pid: Int32) -> String? {
        guard pid > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
