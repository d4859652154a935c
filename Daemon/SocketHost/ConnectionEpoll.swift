import CSystemd
import Glibc
import MediatorEventLoop

/// An epoll instance of ``LineServer``'s own that holds every connection's
/// socket; the loop watches it as one source.
///
/// Why not one sd-event source per connection: sd-event dispatches one
/// source per iteration, and each iteration costs some 1,000 instructions
/// and an epoll_wait of its own (prepare, a wait without timeout whenever a
/// source is pending, dispatch). A line read and its answer written took two
/// of them (the read, then the flush as a post source); sixteen connections
/// ready at once took seventeen. Here one dispatch reads every connection
/// that is ready and then flushes, and an idle connection costs no
/// sd_event_source.
///
/// Each entry carries an unretained pointer to its connection: the server
/// removes a connection (``remove(_:)``) before it lets go of it, and turns
/// a batch's pointers into references before any handler runs.
/// Confined to the loop's thread.
final class ConnectionEpoll {
    /// The most entries one ``ready()`` returns; the rest stay ready for
    /// the next dispatch (level-triggered).
    static let batchSize = 64

    let descriptor: Int32
    private let entries: UnsafeMutableBufferPointer<epoll_event>

    init() throws(SDEventError) {
        descriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard descriptor >= 0 else { throw SDEventError("epoll_create1", errno: errno) }
        entries = .allocate(capacity: Self.batchSize)
    }

    deinit {
        Glibc.close(descriptor)
        entries.deallocate()
    }

    /// Starts watching `fd` for `events` (level-triggered; hang-ups and
    /// errors are always reported), reported with `token`.
    func add(_ fd: Int32, events: IOEvents, token: UnsafeMutableRawPointer) throws(SDEventError) {
        try control(EPOLL_CTL_ADD, fd, events: events, token: token)
    }

    /// Changes the events `fd` is watched for.
    func modify(_ fd: Int32, events: IOEvents, token: UnsafeMutableRawPointer) throws(SDEventError) {
        try control(EPOLL_CTL_MOD, fd, events: events, token: token)
    }

    /// Stops watching `fd` (before it is closed or handed over: epoll
    /// watches the open file, which a copy of the descriptor elsewhere
    /// keeps alive).
    func remove(_ fd: Int32) {
        _ = epoll_ctl(descriptor, EPOLL_CTL_DEL, fd, nil)
    }

    /// The entries ready now, without waiting; valid until the next call.
    func ready() -> UnsafeMutableBufferPointer<epoll_event> {
        var count: Int32
        repeat {
            count = epoll_wait(descriptor, entries.baseAddress, Int32(Self.batchSize), 0)
        } while count < 0 && errno == EINTR
        return UnsafeMutableBufferPointer(rebasing: entries[0..<max(0, Int(count))])
    }

    private func control(_ operation: Int32, _ fd: Int32, events: IOEvents, token: UnsafeMutableRawPointer) throws(SDEventError) {
        var entry = epoll_event()
        entry.events = events.rawValue
        entry.data.ptr = token
        guard epoll_ctl(descriptor, operation, fd, &entry) == 0 else {
            throw SDEventError(operation == EPOLL_CTL_ADD ? "epoll_ctl(ADD)" : "epoll_ctl(MOD)", errno: errno)
        }
    }
}
