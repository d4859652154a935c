import MediatorEventLoop
import MediatorTransport
import NIOCore

/// When each line read is handled: at once when its connection is light
/// (``FairDispatch``), otherwise queued (``InboundQueues``) and handled in
/// fair order by a deferred source that runs below reads and the flush in
/// sd-event's priorities, for one time slice at a time. So a flood delays a
/// light uid's lines by about a slice, not by its backlog, and a peer far
/// ahead of the daemon waits in its socket (reading paused), not in memory.
/// Confined to the loop's thread.
final class InboundDispatch {
    private let inbound = InboundQueues()
    private var fairDispatch = FairDispatch()
    /// Connections not read from until their queue shrinks.
    private var pausedReading: Set<ConnectionID> = []
    private var source: DeferSource?
    private let handle: (ConnectionID, QueuedLine) -> Void
    private let setReading: (ConnectionID, Bool) -> Void

    static let pauseReadingAt = 256
    static let resumeReadingAt = 64
    /// Below reads (0) and the flush (``LineServer/flushPriority``).
    static let priority: Int64 = 2

    init(
        loop: SDEventLoop, handle: @escaping (ConnectionID, QueuedLine) -> Void,
        setReading: @escaping (ConnectionID, Bool) -> Void
    ) throws(SDEventError) {
        self.handle = handle
        self.setReading = setReading
        let source = try loop.addDefer { [unowned self] _ in dispatchSlice() }
        try source.setPriority(Self.priority)
        try source.setEnablement(.off)
        self.source = source
    }

    deinit { source?.cancel() }

    /// A line read from `connection`: handled now, or queued.
    func received(_ line: InboundLine, descriptors: PassedDescriptors?, from connection: ConnectionID, uid: UInt32) {
        let now = NIODeadline.now()
        if fairDispatch.handlesAtOnce(connection, uid: uid, nothingQueued: inbound.waiting(connection) == 0, now: now) {
            handle(connection, QueuedLine(line: line, descriptors: descriptors))
            // Charged by the time it took (uid 0 is exempt and not timed).
            if uid != 0 { fairDispatch.handled(uid: uid, from: now, to: .now()) }
            return
        }
        fairDispatch.queued(connection, now: now)
        let waiting = inbound.append(line, descriptors: descriptors, from: connection, uid: uid)
        if waiting >= Self.pauseReadingAt, pausedReading.insert(connection).inserted { setReading(connection, false) }
        try? source?.setEnablement(.oneShot)
    }

    /// Handles queued lines in fair order for one slice; comes back at the
    /// next iteration when lines are left, after that iteration's reads.
    private func dispatchSlice() {
        let start = NIODeadline.now()
        let slice = fairDispatch.slice(at: start)
        while let (connection, line, left) = inbound.next() {
            handle(connection, line)
            if left <= Self.resumeReadingAt, pausedReading.remove(connection) != nil { setReading(connection, true) }
            if NIODeadline.now() - start >= slice { break }
        }
        if !inbound.isEmpty { try? source?.setEnablement(.oneShot) }
    }

    /// `connection` closed: the lines it still has queued, in order.
    func forget(_ connection: ConnectionID) -> [QueuedLine] {
        fairDispatch.forget(connection)
        pausedReading.remove(connection)
        return inbound.removeAll(from: connection)
    }

    /// Handles every queued line now, whatever its turn, and resumes
    /// reading where it was paused for the queue: before a re-exec, whose
    /// successor starts with no queue (and no one to resume a pause).
    func drain() {
        while let (connection, line, _) = inbound.next() { handle(connection, line) }
        for connection in pausedReading { setReading(connection, true) }
        pausedReading.removeAll()
    }

    func shrinkSparseTables() -> Bool { fairDispatch.shrinkSparseTables() }
}
