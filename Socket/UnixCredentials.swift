/// A peer's process and user, as the kernel recorded them at `connect`
/// (SO_PEERCRED). Same layout as `struct ucred`, which Swift's Glibc import
/// hides behind `_GNU_SOURCE`.
package struct UnixCredentials: Sendable, Equatable {
    package var pid: Int32
    package var uid: UInt32
    package var gid: UInt32
}
