import NIOCore

/// What the broker asks its host to do after handling an input. The broker
/// itself does no I/O, so it can be driven in tests without sockets.
package enum BrokerEffect: Sendable {
    /// Queue a line for a connection (flushed once per read cycle).
    case send(ConnectionID, ByteBuffer)
    /// Queue a line with the descriptors it declares (its `fds`); the host
    /// closes them once written, or if the connection is gone.
    case sendWithDescriptors(ConnectionID, ByteBuffer, PassedDescriptors)
    /// Close descriptors that go nowhere (a refused or ended call's).
    case releaseDescriptors(PassedDescriptors)
    /// Close a connection after what was queued for it.
    case close(ConnectionID)
    /// Call ``Broker/expireCalls(now:)`` at this time (replaces any earlier request).
    case wakeUp(at: NIODeadline)
    /// Start a component's process; report back with ``Broker/processStarted(spawnID:pid:now:)``
    /// and ``Broker/processExited(spawnID:end:now:)``.
    case spawn(SpawnOrder)
    /// Send a signal to a component's process, or to its whole process group
    /// (for processes the daemon started, each in a group of its own).
    case signal(pid: Int32, signal: Int32, group: Bool)
    /// Ask systemd to start or stop a unit; a failure comes back through
    /// ``Broker/unitFailed(target:reason:now:)``.
    case startUnit(String, target: String)
    case stopUnit(String)
    /// Every at-boot component has registered or failed.
    case bootComplete
    /// After a crash: the process the predecessor kept in the fd store as
    /// `spawnID` claimed `target`'s component. Watch it through its stored
    /// pidfd, read its pipes, and report its end with
    /// ``Broker/processExited(spawnID:end:now:)`` (``ProcessEnd/unobserved``:
    /// it is not this daemon's child).
    case adoptStoredProcess(spawnID: Int, pid: Int32, target: String)
    /// End the stored processes with these spawn ids: nobody claimed them.
    case endStoredProcesses([Int])
    /// `mediator/reexec`: hand everything to a new image of the daemon's
    /// binary; the caller (its id as it arrived; nil for a oneway call) is
    /// answered by the new image, or by this one if the exec fails.
    case reexec(ConnectionID, idBytes: ByteBuffer?)
    /// Test hook: hang the event loop for good, as a bug would, so that the
    /// watchdog can be seen to fire. Only with `testHooks` configured.
    case blockEventLoop
}
