/// The descriptors that arrived with one message, as the broker knows them:
/// a handle and a count. The host keeps the descriptors themselves; the
/// broker, which does no I/O, decides where they go, and each handle ends
/// in exactly one ``BrokerEffect/send(_:_:descriptors:)`` or
/// ``BrokerEffect/releaseDescriptors(_:)`` (contract section 8: the daemon
/// keeps no copy, and closes what it cannot deliver).
package struct PassedDescriptors: Hashable, Sendable, CustomStringConvertible {
    /// The host's number for them, unique for the daemon's lifetime.
    package let handle: UInt64
    /// How many: the message's `fds`.
    package let count: Int
    /// Whose they are, for the per-uid quota.
    package let uid: UInt32

    package init(handle: UInt64, count: Int, uid: UInt32) {
        self.handle = handle
        self.count = count
        self.uid = uid
    }

    package var description: String { "descriptors #\(handle) (\(count))" }
}
