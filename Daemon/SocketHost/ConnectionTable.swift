/// ``LineServer``'s open connections by id: a dictionary keyed by the
/// server's own numbers, hashed with one multiply instead of SipHash, with
/// the part of Dictionary's API the server uses.
///
/// Why: every line sent looks its connection up (a routed call sends two),
/// and SipHash is some 100 instructions per lookup. SipHash is there
/// against a peer that picks colliding keys; nobody but the server picks
/// these (they count up from 1), so Fibonacci hashing mixed with the
/// table's seed spreads them evenly. The broker's ``AssignedIDKey`` does the
/// same in its own module.
struct ConnectionTable: Sequence, ExpressibleByDictionaryLiteral {
    typealias ConnectionID = LineServer.ConnectionID
    typealias Key = ConnectionID
    typealias Value = LineServer.Connection

    struct NumberKey: Hashable {
        let value: ConnectionID

        func hash(into hasher: inout Hasher) { hasher.combine(value) }

        /// What Dictionary calls: `hash(into:)` would run SipHash.
        func _rawHashValue(seed: Int) -> Int {
            let mixed = (UInt64(bitPattern: Int64(value)) ^ UInt64(UInt(bitPattern: seed))) &* 0x9E37_79B9_7F4A_7C15
            return Int(truncatingIfNeeded: mixed ^ (mixed >> 29))
        }
    }

    private var storage: [NumberKey: LineServer.Connection] = [:]

    init(dictionaryLiteral elements: (ConnectionID, LineServer.Connection)...) {
        for (id, connection) in elements { storage[NumberKey(value: id)] = connection }
    }

    subscript(id: ConnectionID) -> LineServer.Connection? {
        get { storage[NumberKey(value: id)] }
        set { storage[NumberKey(value: id)] = newValue }
    }

    @discardableResult
    mutating func removeValue(forKey id: ConnectionID) -> LineServer.Connection? {
        storage.removeValue(forKey: NumberKey(value: id))
    }

    var keys: LazyMapSequence<Dictionary<NumberKey, LineServer.Connection>.Keys, ConnectionID> { storage.keys.lazy.map(\.value) }
    var count: Int { storage.count }

    func makeIterator() -> LazyMapSequence<[NumberKey: LineServer.Connection], (key: ConnectionID, value: LineServer.Connection)>.Iterator {
        storage.lazy.map { (key: $0.key.value, value: $0.value) }.makeIterator()
    }
}
