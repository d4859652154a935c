/// Who is at the other end of a connection, as the kernel reported it when
/// the connection was accepted (SO_PEERCRED, SO_PEERGROUPS); a peer cannot
/// forge it.
public struct PeerCredentials: Sendable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    /// Supplementary groups, sorted (empty when unknown).
    public var groups: [UInt32]
    /// `/proc/PID/exe` at connect time, when the daemon may read it.
    public var executable: String?
    /// The uid's name, looked up once at connect (for messages).
    public var userName: String?

    public init(
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
    public var allGroups: [UInt32] { ([gid] + groups).uniqued() }
}

extension Array where Element == UInt32 {
    fileprivate func uniqued() -> [UInt32] {
        var seen = Set<UInt32>()
        return filter { seen.insert($0).inserted }
    }
}

/// A connection's number, unique for the daemon's lifetime.
public typealias ConnectionID = Int
