/// A dictionary key for a number the daemon hands out itself (a connection's
/// id, a forwarded call's id), hashed with one multiply instead of SipHash.
///
/// Why: SipHash costs some 100 instructions per lookup, and a routed call
/// made a dozen such lookups. SipHash is there against hash flooding, where
/// a peer picks keys that collide; nobody but the daemon picks these
/// numbers (they count up), so a multiply by the golden ratio (Fibonacci
/// hashing), mixed with the table's own seed, spreads them evenly. Keys
/// that come from peers (a caller's message id) keep the standard hash.
struct AssignedIDKey: Hashable {
    let value: Int64

    init(_ value: Int64) { self.value = value }
    init(_ value: Int) { self.value = Int64(value) }

    func hash(into hasher: inout Hasher) { hasher.combine(value) }

    /// What Dictionary and Set call: `hash(into:)` would run SipHash.
    func _rawHashValue(seed: Int) -> Int {
        let mixed = (UInt64(bitPattern: value) ^ UInt64(UInt(bitPattern: seed))) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: mixed ^ (mixed >> 29))
    }
}
