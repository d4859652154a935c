/// Who is at the other end of a connection, as the kernel reported it
/// (SO_PEERCRED) when the connection was accepted; a peer cannot forge it.
public struct PeerCredentials: Sendable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}

/// A connection's number, unique for the daemon's lifetime.
public typealias ConnectionID = Int
