import Glibc
import MediatorEventLoop
import MediatorSocket

/// Serves line-framed Unix stream connections on an sd-event loop, passing
/// descriptors both ways (SCM_RIGHTS): what the daemon's socket layer needs
/// and SwiftNIO cannot do. It accepts, reads each connection's lines with
/// the descriptors that came with each, and writes what is sent, flushing
/// after every connection that was ready has been read (so that many lines
/// to one peer leave in one write). The connections' sockets are watched
/// in an epoll set of its own (``ConnectionEpoll``), one source of the loop.
///
/// It knows nothing of the protocol: ``Handlers`` say how many descriptors
/// a line declares and what to do with it. Confined to the loop's thread.
package final class LineServer {
    package typealias ConnectionID = Int

    /// What the server asks of its user, on the loop's thread.
    package struct Handlers {
        /// A connection was accepted (its socket, to read credentials
        /// from); false refuses it (it is closed at once, without
        /// ``closed``). To refuse with a parting line, return true, then
        /// ``LineServer/send(_:line:descriptors:)`` and ``LineServer/close(_:)``.
        package var accepted: (ConnectionID, UnixStreamSocket) -> Bool
        /// `accept` failed with this errno (EMFILE, ENOMEM, …): how long to
        /// stop accepting, or nil to try again at the next readiness.
        package var acceptFailed: (Int32) -> Duration?
        /// How many descriptors a line declares (its `fds`), or nil when it
        /// declares none or cannot be read (then it is delivered with none
        /// and the descriptors that came with it are closed).
        package var declaredDescriptors: ([UInt8]) -> Int?
        /// A complete line (its bytes in the connection's buffer, valid
        /// during the call only) and its descriptors, now the handler's.
        package var line: (ConnectionID, UnsafeRawBufferPointer, [OwnedDescriptor]) -> Void
        /// A line whose descriptors did not come with it (they are closed).
        package var descriptorMismatch: (ConnectionID, [UInt8], DescriptorClaim) -> Void
        /// A line over the limit began (it is discarded up to its LF).
        package var tooLarge: (ConnectionID) -> Void
        /// The connection is gone: the peer closed it, it failed, or it was closed here.
        package var closed: (ConnectionID) -> Void
        /// What is queued toward a connection that its socket has not taken
        /// changed, after a flush: its bytes (the figure given), or its
        /// descriptors, also when a flush wrote all it was given at once.
        /// Per-uid quotas count both.
        package var backlogChanged: (ConnectionID, Int) -> Void

        package init(
            accepted: @escaping (ConnectionID, UnixStreamSocket) -> Bool = { _, _ in true },
            acceptFailed: @escaping (Int32) -> Duration? = { _ in .milliseconds(100) },
            declaredDescriptors: @escaping ([UInt8]) -> Int?,
            line: @escaping (ConnectionID, UnsafeRawBufferPointer, [OwnedDescriptor]) -> Void,
            descriptorMismatch: @escaping (ConnectionID, [UInt8], DescriptorClaim) -> Void = { _, _, _ in },
            tooLarge: @escaping (ConnectionID) -> Void = { _ in },
            closed: @escaping (ConnectionID) -> Void = { _ in },
            backlogChanged: @escaping (ConnectionID, Int) -> Void = { _, _ in }
        ) {
            self.accepted = accepted
            self.acceptFailed = acceptFailed
            self.declaredDescriptors = declaredDescriptors
            self.line = line
            self.descriptorMismatch = descriptorMismatch
            self.tooLarge = tooLarge
            self.closed = closed
            self.backlogChanged = backlogChanged
        }
    }

    /// One connection's socket, buffers and readiness source.
    ///
    /// The mutable members of this class and the server are
    /// `@exclusivity(unchecked)`: both are confined to the loop's thread,
    /// and the run-time checks cost about 2,700 instructions per routed
    /// call in a release build (callgrind, Benchmarks/profile-mediatord).
    final class Connection {
        let id: ConnectionID
        let socket: UnixStreamSocket
        /// The descriptor in ``LineServer/epoll``, or -1 when not watched.
        @exclusivity(unchecked) var watchedDescriptor: Int32 = -1
        @exclusivity(unchecked) var inbound: InboundFrames
        @exclusivity(unchecked) var outbound = OutboundQueue()
        /// Close once what is queued is written.
        @exclusivity(unchecked) var closing = false
        /// Waiting for the socket to take more (EPOLLOUT on).
        @exclusivity(unchecked) var waitingToWrite = false
        /// Reading paused by the user (``LineServer/setReading(_:_:)``).
        @exclusivity(unchecked) var readingPaused = false
        /// The backlog last reported through ``Handlers/backlogChanged``.
        @exclusivity(unchecked) var reportedBacklog = 0
        /// In ``LineServer/dirty`` already.
        @exclusivity(unchecked) var isDirty = false
        /// Dropped (closed, its source cancelled): a handler may drop it
        /// while its read or flush is under way.
        @exclusivity(unchecked) var isDropped = false

        /// The events to wait for now.
        var events: IOEvents {
            var events: IOEvents = readingPaused ? [] : .readable
            if waitingToWrite { events.insert(.writable) }
            return events
        }

        init(id: ConnectionID, socket: UnixStreamSocket, maxLineBytes: Int) {
            self.id = id
            self.socket = socket
            self.inbound = InboundFrames(maxLineBytes: maxLineBytes)
        }

        /// A connection adopted from a predecessor (``LineServer/init(loop:adopting:maxLineBytes:handlers:)``).
        init(id: ConnectionID, socket: UnixStreamSocket, inbound: consuming InboundFrames, outbound: consuming OutboundQueue) {
            self.id = id
            self.socket = socket
            self.inbound = inbound
            self.outbound = outbound
        }
    }

    let loop: SDEventLoop
    let listener: UnixListener
    let maxLineBytes: Int
    let handlers: Handlers
    var listenerSource: IOSource?
    /// Turns accepting back on after a pause (``Handlers/acceptFailed``).
    var acceptResumption: TimerSource?
    /// The connections' sockets, and the loop's source that watches them.
    let epoll: ConnectionEpoll
    var epollSource: IOSource?
    /// Flushes what was queued outside a dispatch of ``epollSource`` (by a
    /// timer, another source, a job), in the next iteration: a deferred
    /// source, on only while armed (a post source would make every
    /// iteration two).
    var flushSource: DeferSource?
    @exclusivity(unchecked) var flushArmed = false
    /// In ``connectionsReady()``, which flushes when it is done.
    @exclusivity(unchecked) var servingReadiness = false
    /// Once, after an adoption: cuts the lines a predecessor read whole but
    /// had not handed out (it handed over from inside a line's handler).
    var adoptedLinesSource: DeferSource?
    @exclusivity(unchecked) var connections: ConnectionTable = [:]
    /// Connections with output queued since the last flush (each once:
    /// ``Connection/isDirty``; the connections themselves, so that a flush
    /// looks nothing up), and a spare array to swap with, so that a flush
    /// allocates nothing.
    @exclusivity(unchecked) var dirty: [Connection] = []
    @exclusivity(unchecked) var flushing: [Connection] = []
    @exclusivity(unchecked) var nextID: ConnectionID = 1
    /// Storage of a written chunk, for the next connection's queue to
    /// write lines into (one for all connections: an idle one keeps none).
    @exclusivity(unchecked) var spareChunk: [UInt8] = []
    /// Where every read's control message lands (descriptors).
    let controlSpace = ControlSpace()

    /// Starts accepting on `listener` (already listening, e.g. adopted from
    /// socket activation) on `loop`'s thread.
    package init(loop: SDEventLoop, listener: UnixListener, maxLineBytes: Int, handlers: Handlers) throws(SDEventError) {
        self.loop = loop
        self.listener = listener
        self.maxLineBytes = maxLineBytes
        self.handlers = handlers
        epoll = try ConnectionEpoll()
        guard let fd = listener.descriptor.rawValue else { throw SDEventError("listener", errno: EBADF) }
        listenerSource = try loop.addIO(fd: fd, events: .readable) { [unowned self] _, _ in acceptWaiting() }
        epollSource = try loop.addIO(fd: epoll.descriptor, events: .readable) { [unowned self] _, _ in connectionsReady() }
        let flush = try loop.addDefer { [unowned self] _ in
            flushArmed = false
            flushDirty()
        }
        // After every read pending in the iteration, so that many lines to
        // one peer leave in one write.
        try flush.setPriority(Self.flushPriority)
        try flush.setEnablement(.off)
        flushSource = flush
    }

    /// sd-event priorities (lower runs first among pending sources): reads
    /// and accepts at the default, 0; the flush of what other sources
    /// queued after them.
    package static let flushPriority: Int64 = 1

    package var connectionCount: Int { connections.count }

    /// Bytes queued toward `connection` that its socket has not taken.
    package func queuedBytes(_ connection: ConnectionID) -> Int {
        connections[connection]?.outbound.queuedByteCount ?? 0
    }

    /// Descriptors queued toward `connection` and not yet written.
    package func queuedDescriptors(_ connection: ConnectionID) -> Int {
        connections[connection]?.outbound.queuedDescriptorCount ?? 0
    }

    /// Queues one line (without its LF) and its descriptors for
    /// `connection`; written at the end of this loop iteration. The
    /// descriptors are the server's now (closed once written, or with the
    /// connection); false when the connection is gone or refused them.
    /// ``send(_:line:descriptors:)`` for bytes that end with their LF
    /// already, copied once into the queue.
    @discardableResult
    package func send(_ connection: ConnectionID, lineWithLF bytes: UnsafeRawBufferPointer, descriptors: [OwnedDescriptor] = []) -> Bool {
        guard let open = connections[connection], !open.closing else {
            for descriptor in descriptors { try? descriptor.close() }
            return false
        }
        do {
            try open.outbound.enqueue(lineWithLF: bytes, descriptors: descriptors, spare: &spareChunk)
        } catch {
            for descriptor in descriptors { try? descriptor.close() }
            return false
        }
        markDirty(open, connection)
        return true
    }

    @discardableResult
    package func send(_ connection: ConnectionID, line: [UInt8], descriptors: [OwnedDescriptor] = []) -> Bool {
        guard let open = connections[connection], !open.closing else {
            for descriptor in descriptors { try? descriptor.close() }
            return false
        }
        do {
            try open.outbound.enqueue(line: line, descriptors: descriptors)
        } catch {
            for descriptor in descriptors { try? descriptor.close() }
            return false
        }
        markDirty(open, connection)
        return true
    }

    /// Closes `connection` once what is queued for it is written.
    package func close(_ connection: ConnectionID) {
        guard let open = connections[connection], !open.closing else { return }
        open.closing = true
        markDirty(open, connection)
    }

    /// Closes `connection` now, dropping what is queued for it (a peer that
    /// does not read what it is sent).
    package func abort(_ connection: ConnectionID) {
        drop(connection)
    }

    /// Stops or resumes reading from `connection`, e.g. while the peers it
    /// sends to do not keep up; what it sent is still read later, in order.
    package func setReading(_ connection: ConnectionID, _ enabled: Bool) {
        guard let open = connections[connection], open.readingPaused == enabled else { return }
        open.readingPaused = !enabled
        rewatch(open)
    }

    /// Stops accepting and closes every connection now (what is queued is dropped).
    package func shutdown() {
        listenerSource?.cancel()
        listenerSource = nil
        acceptResumption?.cancel()
        acceptResumption = nil
        epollSource?.cancel()
        epollSource = nil
        flushSource?.cancel()
        flushSource = nil
        adoptedLinesSource?.cancel()
        adoptedLinesSource = nil
        for connection in Array(connections.keys) { drop(connection) }
    }
}
