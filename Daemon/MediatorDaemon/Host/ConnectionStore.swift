/// Where the daemon keeps a copy of each connection so that a crash does
/// not close it (issue 28): under systemd, the service's fd store. The
/// launcher gives the calls (`Daemon/Systemd`, ``FileDescriptorStore``);
/// the host stores each connection it admits and removes it when it
/// closes it (the store's copy would keep it open otherwise).
package struct ConnectionStore: Sendable {
    package var store: @Sendable (Int32, String) -> Void
    package var remove: @Sendable (String) -> Void

    package init(store: @escaping @Sendable (Int32, String) -> Void, remove: @escaping @Sendable (String) -> Void) {
        self.store = store
        self.remove = remove
    }

    static let namePrefix = "connection-"

    /// The name a connection is stored under.
    static func name(_ connection: ConnectionID) -> String { namePrefix + "\(connection)" }

    /// The connection id a stored name stands for; nil for any other name.
    package static func connection(named name: String) -> ConnectionID? {
        guard name.hasPrefix(namePrefix), let id = Int(name.dropFirst(namePrefix.count)), id > 0 else { return nil }
        return id
    }
}
