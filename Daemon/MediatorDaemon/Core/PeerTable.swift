/// The broker's peers by connection: a dictionary keyed by ``AssignedIDKey``
/// (the daemon numbers connections itself, so no peer picks the keys and
/// one multiply hashes them; a request, and its answer, each look a peer up),
/// with the part of Dictionary's API the broker uses, by `ConnectionID`.
struct PeerTable: Sequence {
    typealias Storage = [AssignedIDKey: Broker.Peer]
    private var storage: Storage = [:]

    subscript(connection: ConnectionID) -> Broker.Peer? {
        get { storage[AssignedIDKey(connection)] }
        set { storage[AssignedIDKey(connection)] = newValue }
        // In place: `peers[c]?.field = x` changes the stored peer, no copy.
        _modify { yield &storage[AssignedIDKey(connection)] }
    }

    func index(forKey connection: ConnectionID) -> Storage.Index? { storage.index(forKey: AssignedIDKey(connection)) }

    /// By position (``index(forKey:)``), read or changed where stored.
    var values: Storage.Values {
        get { storage.values }
        _modify { yield &storage.values }
    }

    @discardableResult
    mutating func removeValue(forKey connection: ConnectionID) -> Broker.Peer? {
        storage.removeValue(forKey: AssignedIDKey(connection))
    }

    var keys: LazyMapSequence<Storage.Keys, ConnectionID> { storage.keys.lazy.map { ConnectionID($0.value) } }
    var count: Int { storage.count }
    var isEmpty: Bool { storage.isEmpty }
    var capacity: Int { storage.capacity }

    func makeIterator() -> LazyMapSequence<Storage, (key: ConnectionID, value: Broker.Peer)>.Iterator {
        storage.lazy.map { (key: ConnectionID($0.key.value), value: $0.value) }.makeIterator()
    }

    /// See ``Swift/Dictionary/shrinkIfSparse(floor:)``.
    mutating func shrinkIfSparse() -> Bool { storage.shrinkIfSparse() }
}
