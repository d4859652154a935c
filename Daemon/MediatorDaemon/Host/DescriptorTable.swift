import MediatorSocket

/// The descriptors the daemon holds, from the read that brought them until
/// they leave with a message or are closed: the host's side of
/// ``PassedDescriptors``, which is all the broker sees of them.
///
/// It also keeps the per-uid count the quota reads: a descriptor counts
/// against its sender's uid while it is here and while it waits in the
/// outbound queue of the connection it was sent to (``queued(_:toward:)``
/// until ``written(toward:stillQueued:)`` or ``connectionClosed(_:)``).
/// Confined to the loop's thread.
struct DescriptorTable {
    private var held: [UInt64: [OwnedDescriptor]] = [:]
    private var nextHandle: UInt64 = 1
    /// Per connection, the batches queued toward it in order: (uid, count).
    private var queuedToward: [ConnectionID: [(uid: UInt32, count: Int)]] = [:]
    /// Descriptors held or queued, by the uid that sent them.
    private(set) var countByUID: [UInt32: Int] = [:]
    /// All descriptors held or queued.
    private(set) var total = 0
    /// Descriptors received since the start, and those closed undelivered.
    private(set) var received = 0
    private(set) var released = 0

    /// Takes `descriptors` (sent by `uid`) in; nil when there are none.
    mutating func admit(_ descriptors: [OwnedDescriptor], uid: UInt32) -> PassedDescriptors? {
        guard !descriptors.isEmpty else { return nil }
        let handle = nextHandle
        nextHandle += 1
        held[handle] = descriptors
        count(descriptors.count, uid: uid)
        received += descriptors.count
        return PassedDescriptors(handle: handle, count: descriptors.count, uid: uid)
    }

    /// The descriptors of `passed`, for the message that carries them; nil
    /// when they are gone already.
    mutating func take(_ passed: PassedDescriptors) -> [OwnedDescriptor]? {
        held.removeValue(forKey: passed.handle)
    }

    /// They went into `connection`'s outbound queue: they count until written.
    mutating func queued(_ passed: PassedDescriptors, toward connection: ConnectionID) {
        queuedToward[connection, default: []].append((passed.uid, passed.count))
    }

    /// Closes the descriptors of `passed` (they go nowhere).
    mutating func release(_ passed: PassedDescriptors) {
        guard let descriptors = held.removeValue(forKey: passed.handle) else { return }
        for descriptor in descriptors { try? descriptor.close() }
        released += descriptors.count
        count(-descriptors.count, uid: passed.uid)
    }

    /// The server closed them instead of queuing them (their connection was gone).
    mutating func dropped(_ passed: PassedDescriptors) {
        released += passed.count
        count(-passed.count, uid: passed.uid)
    }

    /// `connection`'s outbound queue holds `stillQueued` descriptors now:
    /// the batches written before them no longer count.
    mutating func written(toward connection: ConnectionID, stillQueued: Int) {
        guard var batches = queuedToward[connection] else { return }
        var queued = batches.reduce(0) { $0 + $1.count }
        var sent = 0
        while sent < batches.count, queued > stillQueued {
            queued -= batches[sent].count
            count(-batches[sent].count, uid: batches[sent].uid)
            sent += 1
        }
        batches.removeFirst(sent)
        queuedToward[connection] = batches.isEmpty ? nil : batches
    }

    /// The connection is gone: what was queued toward it was closed with it.
    mutating func connectionClosed(_ connection: ConnectionID) {
        guard let batches = queuedToward.removeValue(forKey: connection) else { return }
        for batch in batches {
            count(-batch.count, uid: batch.uid)
            released += batch.count
        }
    }

    /// Closes everything still held (the daemon stops).
    mutating func releaseAll() {
        for descriptors in held.values {
            for descriptor in descriptors { try? descriptor.close() }
        }
        held = [:]
    }

    var isQueuingAny: Bool { !queuedToward.isEmpty }

    /// Whether descriptors are held for a message not yet sent (a held call's).
    var isHoldingAny: Bool { !held.isEmpty }

    /// What a successor image needs to count on (issue 28): the batches
    /// queued toward each connection, whose descriptors the sockets'
    /// hand-over carries, and the totals of `stats`.
    struct HandOver: Equatable {
        var received: Int
        var released: Int
        var queuedToward: [ConnectionID: [(uid: UInt32, count: Int)]]

        static func == (lhs: HandOver, rhs: HandOver) -> Bool {
            lhs.received == rhs.received && lhs.released == rhs.released
                && lhs.queuedToward.mapValues { $0.map { [Int($0.uid), $0.count] } }
                    == rhs.queuedToward.mapValues { $0.map { [Int($0.uid), $0.count] } }
        }
    }

    /// Only with nothing held (``isHoldingAny`` false): held descriptors
    /// belong to no connection and would not be carried.
    var handOver: HandOver { HandOver(received: received, released: released, queuedToward: queuedToward) }

    /// Carries on counting from a predecessor's ``handOver``.
    init(resuming handOver: HandOver) {
        received = handOver.received
        released = handOver.released
        queuedToward = handOver.queuedToward
        for batches in handOver.queuedToward.values {
            for batch in batches { count(batch.count, uid: batch.uid) }
        }
    }

    init() {}

    private mutating func count(_ delta: Int, uid: UInt32) {
        total += delta
        let now = countByUID[uid, default: 0] + delta
        countByUID[uid] = now == 0 ? nil : now
    }
}
