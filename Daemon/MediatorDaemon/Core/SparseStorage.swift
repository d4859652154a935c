/// A Swift dictionary keeps the largest storage it ever had: after a burst
/// of 4,000 connections or 100,000 calls in flight, the tables of an idle
/// daemon would stay that large for good. The broker's tables are rebuilt at
/// their size once they use little of their storage, from a periodic trim
/// (``BrokerHost``), never on the routing path.
extension Dictionary {
    /// Rebuilds the dictionary at its size when it fills less than an eighth
    /// of its storage and that storage is past `floor` entries; says whether it did.
    @discardableResult
    mutating func shrinkIfSparse(floor: Int = 256) -> Bool {
        guard capacity > floor, count * 8 < capacity else { return false }
        var smaller = Dictionary(minimumCapacity: count)
        for (key, value) in self { smaller[key] = value }
        self = smaller
        return true
    }
}

extension Set {
    @discardableResult
    mutating func shrinkIfSparse(floor: Int = 256) -> Bool {
        guard capacity > floor, count * 8 < capacity else { return false }
        self = Set(minimumCapacity: count).union(self)
        return true
    }
}
