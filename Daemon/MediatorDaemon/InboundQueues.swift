import MediatorTransport
import NIOCore

/// Lines read but not yet handled, one FIFO per connection, served round
/// robin: across uids first, then across that uid's connections, one line
/// each turn. So a uid that floods the daemon waits behind its own lines,
/// while another uid's line is handled within one turn of every busy uid.
/// Each connection's lines keep their order; across connections there never
/// was an order to keep.
///
/// Pure bookkeeping: the host decides when to read and how long to dispatch.
struct InboundQueues {
    private struct Connection {
        let uid: UInt32
        var lines = CircularBuffer<InboundLine>(initialCapacity: 8)
    }

    private struct UID {
        /// This uid's connections with lines, in turn order.
        var ready = CircularBuffer<ConnectionID>(initialCapacity: 4)
    }

    private var connections: [ConnectionID: Connection] = [:]
    private var uids: [UInt32: UID] = [:]
    /// Uids with lines, in turn order.
    private var readyUIDs = CircularBuffer<UInt32>(initialCapacity: 8)
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// How many uids have lines waiting.
    var uidsWaiting: Int { readyUIDs.count }

    /// Lines waiting from `connection`.
    func waiting(_ connection: ConnectionID) -> Int { connections[connection]?.lines.count ?? 0 }

    /// Queues a line; returns how many lines `connection` now has waiting.
    /// (Every change below goes through the dictionaries' in-place accessors,
    /// so a queue's storage is never copied.)
    @discardableResult
    mutating func append(_ line: InboundLine, from connection: ConnectionID, uid: UInt32) -> Int {
        count += 1
        let isNew = connections[connection] == nil
        connections[connection, default: Connection(uid: uid)].lines.append(line)
        guard isNew else { return connections[connection]?.lines.count ?? 0 }
        let uidIsNew = uids[uid] == nil
        uids[uid, default: UID()].ready.append(connection)
        if uidIsNew { readyUIDs.append(uid) }
        return 1
    }

    /// The next line to handle: the uid whose turn it is, then its connection
    /// whose turn it is. Both move to the back of their rings.
    mutating func next() -> (connection: ConnectionID, line: InboundLine, left: Int)? {
        guard let uid = readyUIDs.popFirst(), let connection = uids[uid]?.ready.popFirst(),
              let line = connections[connection]?.lines.popFirst()
        else { return nil }
        count -= 1
        let left = connections[connection]?.lines.count ?? 0
        if left == 0 {
            connections[connection] = nil
        } else {
            uids[uid]?.ready.append(connection)
        }
        if uids[uid]?.ready.isEmpty ?? true {
            uids[uid] = nil
        } else {
            readyUIDs.append(uid)
        }
        return (connection, line, left)
    }

    /// Takes every line still waiting from `connection` (it is closing), in order.
    mutating func removeAll(from connection: ConnectionID) -> [InboundLine] {
        guard let entry = connections.removeValue(forKey: connection) else { return [] }
        count -= entry.lines.count
        if var owner = uids[entry.uid] {
            owner.ready.removeAll { $0 == connection }
            if owner.ready.isEmpty {
                uids[entry.uid] = nil
                readyUIDs.removeAll { $0 == entry.uid }
            } else {
                uids[entry.uid] = owner
            }
        }
        return Array(entry.lines)
    }
}
