/// A peer's process and user, as the kernel recorded them at `connect`
/// (SO_PEERCRED). Same layout as `struct ucred`, which Swift's Glibc import
/// hides behind `_GNU_SOURCE`.
public struct UnixCredentials: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
}
