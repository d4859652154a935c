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
///
/// The rings hold the queues themselves (objects), not their keys: taking
/// the next line hashes nothing, and a queue changes in place. The
/// dictionaries are only for finding a connection's or a uid's queue when a
/// line arrives or a connection closes; a queue leaves them when it empties.
final class InboundQueues {
    private final class ConnectionQueue {
        let connection: ConnectionID
        let owner: UIDQueue
        var lines = CircularBuffer<QueuedLine>(initialCapacity: 8)

        init(_ connection: ConnectionID, owner: UIDQueue) {
            self.connection = connection
            self.owner = owner
        }
    }

    private final class UIDQueue {
        let uid: UInt32
        /// This uid's connections with lines, in turn order.
        var ready = CircularBuffer<ConnectionQueue>(initialCapacity: 4)

        init(_ uid: UInt32) { self.uid = uid }
    }

    private var connections: [ConnectionID: ConnectionQueue] = [:]
    private var uids: [UInt32: UIDQueue] = [:]
    /// Uids with lines, in turn order.
    private var readyUIDs = CircularBuffer<UIDQueue>(initialCapacity: 8)
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// How many uids have lines waiting.
    var uidsWaiting: Int { readyUIDs.count }

    /// Lines waiting from `connection`.
    func waiting(_ connection: ConnectionID) -> Int { count == 0 ? 0 : connections[connection]?.lines.count ?? 0 }

    /// Queues a line; returns how many lines `connection` now has waiting.
    @discardableResult
    func append(_ line: InboundLine, descriptors: PassedDescriptors? = nil, from connection: ConnectionID, uid: UInt32) -> Int {
        let line = QueuedLine(line: line, descriptors: descriptors)
        count += 1
        if let queue = connections[connection] {
            queue.lines.append(line)
            return queue.lines.count
        }
        let owner: UIDQueue
        if let waiting = uids[uid] {
            owner = waiting
        } else {
            owner = UIDQueue(uid)
            uids[uid] = owner
            readyUIDs.append(owner)
        }
        let queue = ConnectionQueue(connection, owner: owner)
        queue.lines.append(line)
        connections[connection] = queue
        owner.ready.append(queue)
        return 1
    }

    /// The next line to handle: the uid whose turn it is, then its connection
    /// whose turn it is. Both move to the back of their rings.
    func next() -> (connection: ConnectionID, line: QueuedLine, left: Int)? {
        guard let owner = readyUIDs.popFirst(), let queue = owner.ready.popFirst(),
            let line = queue.lines.popFirst()
        else { return nil }
        count -= 1
        let left = queue.lines.count
        if left == 0 {
            connections[queue.connection] = nil
        } else {
            owner.ready.append(queue)
        }
        if owner.ready.isEmpty {
            uids[owner.uid] = nil
        } else {
            readyUIDs.append(owner)
        }
        return (queue.connection, line, left)
    }

    /// Takes every line still waiting from `connection` (it is closing), in order.
    func removeAll(from connection: ConnectionID) -> [QueuedLine] {
        guard let queue = connections.removeValue(forKey: connection) else { return [] }
        count -= queue.lines.count
        let owner = queue.owner
        owner.ready.removeAll { $0 === queue }
        if owner.ready.isEmpty {
            uids[owner.uid] = nil
            readyUIDs.removeAll { $0 === owner }
        }
        return Array(queue.lines)
    }
}

/// A line waiting in ``InboundQueues``, with the descriptors that came with it.
struct QueuedLine {
    var line: InboundLine
    var descriptors: PassedDescriptors?
}
