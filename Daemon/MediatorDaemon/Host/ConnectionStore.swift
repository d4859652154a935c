/// Where the daemon keeps a copy of each connection so that a crash does
/// not close it (issue 28): under systemd, the service's fd store. The
/// launcher gives the calls (`Daemon/Systemd`, ``FileDescriptorStore``);
/// the host stores each connection it admits and removes it when it
/// closes it (the store's copy would keep it open otherwise).
package struct ConnectionStore: Sendable {
    package var store: @Sendable (Int32, String) -> Void
    package var remove: @Sendable (String) -> Void
    /// For a restart's hand-over (BrokerHost+StoreHandOver.swift): stores
    /// and says whether systemd took it.
    package var storeReporting: @Sendable (Int32, String) -> Bool
    /// Waits until systemd has handled every message sent before; false
    /// when that cannot be confirmed.
    package var barrier: @Sendable () -> Bool

    package init(
        store: @escaping @Sendable (Int32, String) -> Void, remove: @escaping @Sendable (String) -> Void,
        storeReporting: (@Sendable (Int32, String) -> Bool)? = nil, barrier: @escaping @Sendable () -> Bool = { false }
    ) {
        self.store = store
        self.remove = remove
        // Without it a hand-over cannot be confirmed, so none is tried.
        self.storeReporting = storeReporting ?? { _, _ in false }
        self.barrier = barrier
    }

    static let namePrefix = "connection-"
    /// The restart's hand-over memfd (its header and state).
    package static let handOverName = "handover"
    /// A descriptor a connection had read or queued, by its number in the
    /// process that handed it over (the header refers to it by that number).
    package static let carriedPrefix = "handover-fd-"

    static func carriedName(_ fd: Int32) -> String { carriedPrefix + "\(fd)" }

    /// The name a connection is stored under.
    static func name(_ connection: ConnectionID) -> String { namePrefix + "\(connection)" }

    /// The connection id a stored name stands for; nil for any other name.
    package static func connection(named name: String) -> ConnectionID? {
        guard name.hasPrefix(namePrefix), let id = Int(name.dropFirst(namePrefix.count)), id > 0 else { return nil }
        return id
    }
}
