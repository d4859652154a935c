import Glibc
import MediatorEventLoop
import MediatorSocket

/// Handing the connections to a successor, and carrying on from a
/// predecessor's (issue 28): see ``LineServerHandOver``.
extension LineServer {
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
        epollSource?.cancel()
        epollSource = nil
        flushSource?.cancel()
        flushSource = nil
        adoptedLinesSource?.cancel()
        adoptedLinesSource = nil
        var handed: [LineServerHandOver.Connection] = []
        for (id, connection) in connections.sorted(by: { $0.key < $1.key }) {
            // A read or flush under way (a handler called this) stops at it.
            connection.isDropped = true
            unwatch(connection)
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

    /// Takes connected sockets that a predecessor left without a hand-over
    /// (after a crash, from systemd's fd store), under their ids: read and
    /// written from now on, with nothing read or queued before. New
    /// connections are numbered after them. A socket that cannot be
    /// adopted is closed and reported with ``Handlers/closed``.
    package func adopt(sockets: [(id: ConnectionID, socket: OwnedDescriptor)]) {
        nextID = max(nextID, (sockets.map(\.id).max() ?? 0) + 1)
        for (id, socket) in sockets {
            adopt(LineServerHandOver.Connection(
                id: id, socket: socket,
                inbound: InboundFrames.HandOver(bytes: [], streamOffset: 0, discardingLine: false, batches: []),
                outbound: [], readingPaused: false, closing: false, reportedBacklog: 0))
        }
    }

    func closeDescriptors(of handed: LineServerHandOver.Connection) {
        try? handed.socket.close()
        for batch in handed.inbound.batches { batch.close() }
        for write in handed.outbound { for descriptor in write.descriptors { try? descriptor.close() } }
    }

    /// Also for a connection whose reading is paused: a pause stops reads
    /// from the socket, and lines already read are delivered (as in ``read(_:_:)``).
    func deliverAdoptedLines() {
        for id in connections.keys.sorted() {
            guard let connection = connections[id], connection.inbound.bufferedByteCount > 0 else { continue }
            _ = deliverLines(id, connection)
        }
    }

    func adopt(_ handed: LineServerHandOver.Connection) {
        let id = handed.id
        guard connections[id] == nil else {
            // Not from a hand-over this server made (ids are unique there,
            // and decode refuses a reused one): the first one stays.
            closeDescriptors(of: handed)
            return
        }
        guard let socket = try? UnixStreamSocket(adopting: handed.socket),
              let outbound = try? OutboundQueue(resuming: handed.outbound)
        else {
            closeDescriptors(of: handed)
            handlers.closed(id)
            return
        }
        let connection = Connection(
            id: id, socket: socket, inbound: InboundFrames(maxLineBytes: maxLineBytes, resuming: handed.inbound), outbound: outbound)
        connection.readingPaused = handed.readingPaused
        connection.closing = handed.closing
        connection.reportedBacklog = handed.reportedBacklog
        // Output queued, or a close waiting for it: the first writable
        // readiness flushes it (nothing marks it for a flush: it was queued
        // before this server existed).
        connection.waitingToWrite = !connection.outbound.isEmpty || connection.closing
        do {
            try watch(connection)
        } catch {
            connection.inbound.close()
            connection.outbound.close()
            try? socket.close()
            handlers.closed(id)
            return
        }
        connections[id] = connection
    }
}
