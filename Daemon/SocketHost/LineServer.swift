import Glibc
import MediatorEventLoop
import MediatorSocket

/// Serves line-framed Unix stream connections on an sd-event loop, passing
/// descriptors both ways (SCM_RIGHTS): what the daemon's socket layer needs
/// and SwiftNIO cannot do. It accepts, reads each connection's lines with
/// the descriptors that came with each, and writes what is sent, flushing
/// every connection once per loop iteration (after all of that iteration's
/// reads, so that many lines to one peer leave in one write).
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
        /// A complete line and its descriptors, now the handler's.
        package var line: (ConnectionID, [UInt8], [OwnedDescriptor]) -> Void
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
            line: @escaping (ConnectionID, [UInt8], [OwnedDescriptor]) -> Void,
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
    private final class Connection {
        let socket: UnixStreamSocket
        @exclusivity(unchecked) var source: IOSource?
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

        init(socket: UnixStreamSocket, maxLineBytes: Int) {
            self.socket = socket
            self.inbound = InboundFrames(maxLineBytes: maxLineBytes)
        }

        /// A connection adopted from a predecessor (``LineServer/init(loop:adopting:maxLineBytes:handlers:)``).
        init(socket: UnixStreamSocket, inbound: consuming InboundFrames, outbound: consuming OutboundQueue) {
            self.socket = socket
            self.inbound = inbound
            self.outbound = outbound
        }
    }

    private let loop: SDEventLoop
    private let listener: UnixListener
    private let maxLineBytes: Int
    private let handlers: Handlers
    private var listenerSource: IOSource?
    /// Turns accepting back on after a pause (``Handlers/acceptFailed``).
    private var acceptResumption: TimerSource?
    private var flushSource: DeferSource?
    /// Once, after an adoption: cuts the lines a predecessor read whole but
    /// had not handed out (it handed over from inside a line's handler).
    private var adoptedLinesSource: DeferSource?
    @exclusivity(unchecked) private var connections: [ConnectionID: Connection] = [:]
    /// Connections with output queued since the last flush.
    /// Connections with output queued since the last flush (each once:
    /// ``Connection/isDirty``), and a spare array to swap with, so that a
    /// flush allocates nothing.
    @exclusivity(unchecked) private var dirty: [ConnectionID] = []
    @exclusivity(unchecked) private var flushing: [ConnectionID] = []
    @exclusivity(unchecked) private var nextID: ConnectionID = 1

    /// Starts accepting on `listener` (already listening, e.g. adopted from
    /// socket activation) on `loop`'s thread.
    package init(loop: SDEventLoop, listener: UnixListener, maxLineBytes: Int, handlers: Handlers) throws(SDEventError) {
        self.loop = loop
        self.listener = listener
        self.maxLineBytes = maxLineBytes
        self.handlers = handlers
        guard let fd = listener.descriptor.rawValue else { throw SDEventError("listener", errno: EBADF) }
        listenerSource = try loop.addIO(fd: fd, events: .readable) { [unowned self] _, _ in acceptWaiting() }
        let flush = try loop.addPost { [unowned self] _ in flushDirty() }
        // After every read pending in the iteration, so that many lines to
        // one peer leave in one write.
        try flush.setPriority(Self.flushPriority)
        flushSource = flush
    }

    /// sd-event priorities (lower runs first among pending sources): reads
    /// and accepts at the default, 0; the flush after them.
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
            try open.outbound.enqueue(lineWithLF: bytes, descriptors: descriptors)
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
        try? open.source?.setEvents(open.events)
    }

    /// Stops accepting and closes every connection now (what is queued is dropped).
    package func shutdown() {
        listenerSource?.cancel()
        listenerSource = nil
        acceptResumption?.cancel()
        acceptResumption = nil
        flushSource?.cancel()
        flushSource = nil
        adoptedLinesSource?.cancel()
        adoptedLinesSource = nil
        for connection in Array(connections.keys) { drop(connection) }
    }

    // MARK: - Hand-over (issue 28)

    /// Stops reading, accepting and writing, and hands over everything this
    /// server holds, descriptors open, for a successor to carry on with
    /// ``init(loop:adopting:maxLineBytes:handlers:)``: the listener, and
    /// per connection its socket, the half line read and the descriptors
    /// that came with it, what is queued and not written, and its flags.
    /// No ``Handlers/closed`` is called; the server owns nothing after it
    /// (``shutdown()`` then closes nothing). Nil when it handed over already.
    package func handOver() -> LineServerHandOver? {
        guard let listenerDescriptor = listener.descriptor.take() else { return nil }
        listenerSource?.cancel()
        listenerSource = nil
        acceptResumption?.cancel()
        acceptResumption = nil
        flushSource?.cancel()
        flushSource = nil
        adoptedLinesSource?.cancel()
        adoptedLinesSource = nil
        var handed: [LineServerHandOver.Connection] = []
        for (id, connection) in connections.sorted(by: { $0.key < $1.key }) {
            // A read or flush under way (a handler called this) stops at it.
            connection.isDropped = true
            connection.source?.cancel()
            connection.source = nil
            guard let socket = connection.socket.descriptor.take() else { continue }
            handed.append(LineServerHandOver.Connection(
                id: id, socket: OwnedDescriptor(taking: socket), inbound: connection.inbound.handOver(),
                outbound: connection.outbound.handOver(), readingPaused: connection.readingPaused,
                closing: connection.closing, reportedBacklog: connection.reportedBacklog))
        }
        connections = [:]
        dirty.removeAll()
        return LineServerHandOver(
            listener: OwnedDescriptor(taking: listenerDescriptor), connections: handed, nextConnectionID: nextID)
    }

    /// Carries on from a predecessor's ``handOver()`` on `loop`: accepts on
    /// the same listener, keeps every connection's id, completes its half
    /// line with what it reads next, writes what was queued (and closes the
    /// connections that were closing once it is), and numbers new
    /// connections after the predecessor's.
    ///
    /// A connection whose socket cannot be adopted (not a Unix stream
    /// socket, its output not a valid queue) or watched is closed, with
    /// ``Handlers/closed``, so that the broker forgets it too. A listener
    /// that cannot be adopted throws, and the hand-over's descriptors stay
    /// with it.
    package convenience init(
        loop: SDEventLoop, adopting handOver: LineServerHandOver, maxLineBytes: Int, handlers: Handlers
    ) throws(LineServerHandOverError) {
        let listener: UnixListener
        do {
            listener = try UnixListener(adopting: handOver.listener)
        } catch {
            throw .listener(error)
        }
        do {
            try self.init(loop: loop, listener: listener, maxLineBytes: maxLineBytes, handlers: handlers)
        } catch {
            throw .eventLoop(error)
        }
        do {
            adoptedLinesSource = try loop.addDefer { [unowned self] source in
                source.cancel()
                adoptedLinesSource = nil
                deliverAdoptedLines()
            }
        } catch {
            shutdown()
            throw .eventLoop(error)
        }
        nextID = max(handOver.nextConnectionID, (handOver.connections.map(\.id).max() ?? 0) + 1)
        for handed in handOver.connections { adopt(handed) }
    }

    private func closeDescriptors(of handed: LineServerHandOver.Connection) {
        try? handed.socket.close()
        for batch in handed.inbound.batches { batch.close() }
        for write in handed.outbound { for descriptor in write.descriptors { try? descriptor.close() } }
    }

    /// Also for a connection whose reading is paused: a pause stops reads
    /// from the socket, and lines already read are delivered (as in ``read(_:_:)``).
    private func deliverAdoptedLines() {
        for id in connections.keys.sorted() {
            guard let connection = connections[id], connection.inbound.bufferedByteCount > 0 else { continue }
            _ = deliverLines(id, connection)
        }
    }

    private func adopt(_ handed: LineServerHandOver.Connection) {
        let id = handed.id
        guard connections[id] == nil else {
            // Not from a hand-over this server made (ids are unique there,
            // and decode refuses a reused one): the first one stays.
            closeDescriptors(of: handed)
            return
        }
        guard let socket = try? UnixStreamSocket(adopting: handed.socket),
              let fd = socket.descriptor.rawValue,
              let outbound = try? OutboundQueue(resuming: handed.outbound)
        else {
            closeDescriptors(of: handed)
            handlers.closed(id)
            return
        }
        let connection = Connection(
            socket: socket, inbound: InboundFrames(maxLineBytes: maxLineBytes, resuming: handed.inbound), outbound: outbound)
        connection.readingPaused = handed.readingPaused
        connection.closing = handed.closing
        connection.reportedBacklog = handed.reportedBacklog
        // Output queued, or a close waiting for it: the first writable
        // readiness flushes it (a post source runs only after another source).
        connection.waitingToWrite = !connection.outbound.isEmpty || connection.closing
        do {
            connection.source = try loop.addIO(fd: fd, events: connection.events) { [unowned self, unowned connection] _, events in
                ready(id, connection, events)
            }
        } catch {
            connection.inbound.close()
            connection.outbound.close()
            try? socket.close()
            handlers.closed(id)
            return
        }
        connections[id] = connection
    }

    // MARK: - Reading

    private func acceptWaiting() {
        while true {
            let socket: UnixStreamSocket?
            do {
                socket = try listener.accept()
            } catch {
                if case .system(_, let code) = error, let pause = handlers.acceptFailed(code) { pauseAccepting(for: pause) }
                return
            }
            guard let socket, let fd = socket.descriptor.rawValue else { return }
            let id = nextID
            nextID += 1
            let connection = Connection(socket: socket, maxLineBytes: maxLineBytes)
            do {
                // The connection itself, not its id: no table lookup per
                // readiness (unowned: its source, which holds this closure,
                // is cancelled when it is dropped).
                connection.source = try loop.addIO(fd: fd, events: .readable) { [unowned self, unowned connection] _, events in
                    ready(id, connection, events)
                }
            } catch {
                try? socket.close()
                continue
            }
            // In the table first, so that the handler may send a parting line.
            connections[id] = connection
            guard handlers.accepted(id, socket) else {
                connections[id] = nil
                connection.source?.cancel()
                connection.outbound.close()
                try? socket.close()
                continue
            }
        }
    }

    /// Takes the listener out of epoll for `pause` (it is level-triggered:
    /// left in, a failing accept would spin at full CPU).
    private func pauseAccepting(for pause: Duration) {
        guard acceptResumption == nil, let source = listenerSource else { return }
        try? source.setEnablement(.off)
        acceptResumption = try? loop.addTimer(after: pause) { [unowned self] _, _ in
            acceptResumption = nil
            try? listenerSource?.setEnablement(.on)
        }
    }

    private func ready(_ id: ConnectionID, _ connection: Connection, _ events: IOEvents) {
        if events.contains(.writable) {
            flush(id, connection)
            // The flush may have dropped it.
            guard !connection.isDropped else { return }
        }
        if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) { read(id, connection) }
    }

    /// Reads what is there, a read at a time, and hands each line over.
    private func read(_ id: ConnectionID, _ connection: Connection) {
        while true {
            let received: InboundFrames.Received
            do {
                received = try connection.inbound.receive(from: connection.socket)
            } catch {
                drop(id)
                return
            }
            switch received {
            case .wouldBlock:
                return
            case .endOfStream:
                drop(id)
                return
            case .bytes:
                guard deliverLines(id, connection) else { return }
            }
        }
    }

    /// Hands over every complete line buffered; false when a handler
    /// dropped the connection (or handed the server over) meanwhile.
    private func deliverLines(_ id: ConnectionID, _ connection: Connection) -> Bool {
        while let frame = connection.inbound.nextFrame() {
            switch frame {
            case .tooLarge:
                handlers.tooLarge(id)
            case .line(let line):
                // Without descriptors queued there is nothing to
                // attribute: the line goes as it is (its reader
                // checks that it declares none).
                guard connection.inbound.hasQueuedDescriptors else {
                    handlers.line(id, line.bytes, [])
                    break
                }
                let declared = handlers.declaredDescriptors(line.bytes) ?? 0
                switch connection.inbound.takeDescriptors(declared, for: line) {
                case .descriptors(let descriptors):
                    handlers.line(id, line.bytes, descriptors)
                case let claim:
                    handlers.descriptorMismatch(id, line.bytes, claim)
                }
            }
            // A handler may have closed it.
            guard !connection.isDropped else { return false }
        }
        return true
    }

    // MARK: - Writing

    private func markDirty(_ open: Connection, _ id: ConnectionID) {
        guard !open.isDirty else { return }
        open.isDirty = true
        dirty.append(id)
    }

    private func flushDirty() {
        guard !dirty.isEmpty else { return }
        // Swapped, not copied: a flush's handlers may queue more, for the next one.
        swap(&dirty, &flushing)
        for id in flushing {
            guard let connection = connections[id] else { continue }
            connection.isDirty = false
            flush(id, connection)
        }
        flushing.removeAll(keepingCapacity: true)
    }

    private func flush(_ id: ConnectionID) {
        guard let connection = connections[id] else { return }
        flush(id, connection)
    }

    private func flush(_ id: ConnectionID, _ connection: Connection) {
        // Descriptors written are reported even when the bytes left are
        // the same as before (none): their sender's count goes down then.
        let descriptorsBefore = connection.outbound.queuedDescriptorCount
        let outcome: WriteOutcome
        do {
            outcome = try connection.outbound.write(to: connection.socket)
        } catch {
            drop(id)
            return
        }
        switch outcome {
        case .drained:
            if connection.closing {
                drop(id)
                return
            }
            if connection.waitingToWrite {
                connection.waitingToWrite = false
                try? connection.source?.setEvents(connection.events)
            }
        case .wouldBlock:
            // A close does not wait for a peer that does not read.
            if connection.closing {
                drop(id)
                return
            }
            if !connection.waitingToWrite {
                connection.waitingToWrite = true
                try? connection.source?.setEvents(connection.events)
            }
        }
        let backlog = connection.outbound.queuedByteCount
        if backlog != connection.reportedBacklog || connection.outbound.queuedDescriptorCount != descriptorsBefore {
            connection.reportedBacklog = backlog
            handlers.backlogChanged(id, backlog)
        }
    }

    /// Forgets a connection: its source, its socket and every descriptor it still holds.
    private func drop(_ id: ConnectionID) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        connection.isDropped = true
        connection.source?.cancel()
        connection.inbound.close()
        connection.outbound.close()
        try? connection.socket.close()
        handlers.closed(id)
    }
}
