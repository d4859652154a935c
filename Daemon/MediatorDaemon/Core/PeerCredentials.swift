/// Who is at the other end of a connection, as the kernel reported it when
/// the connection was accepted (SO_PEERCRED, SO_PEERGROUPS); a peer cannot
/// forge it.
package struct PeerCredentials: Sendable, Hashable {
    package var pid: Int32
    package var uid: UInt32
    package var gid: UInt32
    /// Supplementary groups, sorted (empty when unknown).
    package var groups: [UInt32]
    /// `/proc/PID/exe` at connect time, when the daemon may read it.
    package var executable: String?
    /// The uid's name, looked up once at connect (for messages).
    package var userName: String?

    package init(
        pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32] = [], executable: String? = nil, userName: String? = nil
    ) {
        self.userName = userName
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.executable = executable
    }

    /// The primary group and the supplementary ones.
    var allGroups: [UInt32] { ([gid] + groups).uniqued() }
}

extension Array where Element == UInt32 {
    fileprivate func uniqued() -> [UInt32] {
        var seen = Set<UInt32>()
        return filter { seen.insert($0).inserted }
    }
}

/// A connection's number, unique for the daemon's lifetime.
package typealias ConnectionID = Int
