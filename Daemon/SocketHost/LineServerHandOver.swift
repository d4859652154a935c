import MediatorSocket

/// Everything a ``LineServer`` holds, handed to a successor (issue 28): the
/// listener, every connection's socket, what each has read and not cut into
/// lines and queued and not written, with their descriptors, and the next
/// connection id. ``LineServer/handOver()`` makes it and
/// ``LineServer/init(loop:adopting:maxLineBytes:handlers:)`` carries on from
/// it; ``encoded()`` and ``decode(_:descriptors:limit:)`` carry it between
/// processes beside ``descriptors``.
///
/// It owns its descriptors: dropped without being adopted, it closes them.
package struct LineServerHandOver: Sendable {
    /// One connection as it stood.
    package struct Connection: Sendable {
        package var id: LineServer.ConnectionID
        package var socket: OwnedDescriptor
        package var inbound: InboundFrames.HandOver
        package var outbound: [OutboundQueue.PendingWrite]
        /// Reading paused by the user (``LineServer/setReading(_:_:)``).
        package var readingPaused: Bool
        /// To be closed once what is queued is written.
        package var closing: Bool
        /// The backlog last reported through ``LineServer/Handlers/backlogChanged``:
        /// the successor reports only a change from it.
        package var reportedBacklog: Int

        package init(
            id: LineServer.ConnectionID, socket: OwnedDescriptor, inbound: InboundFrames.HandOver,
            outbound: [OutboundQueue.PendingWrite], readingPaused: Bool, closing: Bool, reportedBacklog: Int
        ) {
            self.id = id
            self.socket = socket
            self.inbound = inbound
            self.outbound = outbound
            self.readingPaused = readingPaused
            self.closing = closing
            self.reportedBacklog = reportedBacklog
        }
    }

    package var listener: OwnedDescriptor
    /// By id.
    package var connections: [Connection]
    package var nextConnectionID: LineServer.ConnectionID

    package init(listener: OwnedDescriptor, connections: [Connection], nextConnectionID: LineServer.ConnectionID) {
        self.listener = listener
        self.connections = connections
        self.nextConnectionID = nextConnectionID
    }

    /// Every descriptor, in the order the byte form refers to them by
    /// index: the listener, then per connection its socket, its inbound
    /// batches' descriptors and its outbound writes' descriptors.
    package var descriptors: [OwnedDescriptor] {
        var all = [listener]
        for connection in connections {
            all.append(connection.socket)
            for batch in connection.inbound.batches { all += batch.descriptors }
            for write in connection.outbound { all += write.descriptors }
        }
        return all
    }
}
