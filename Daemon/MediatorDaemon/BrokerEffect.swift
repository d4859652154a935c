import NIOCore

/// What the broker asks its host to do after handling an input. The broker
/// itself does no I/O, so it can be driven in tests without sockets.
public enum BrokerEffect: Sendable {
    /// Queue a line for a connection (flushed once per read cycle).
    case send(ConnectionID, ByteBuffer)
    /// Close a connection after what was queued for it.
    case close(ConnectionID)
    /// Call ``Broker/expireCalls(now:)`` at this time (replaces any earlier request).
    case wakeUp(at: NIODeadline)
    /// Test hook: hang the event loop for good, as a bug would, so that the
    /// watchdog can be seen to fire. Only with `testHooks` configured.
    case blockEventLoop
}
