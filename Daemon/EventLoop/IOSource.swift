import CSystemd
import Glibc

/// The epoll events an `IOSource` waits for, and those it reports.
package struct IOEvents: OptionSet, Hashable, Sendable {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    package static let readable = IOEvents(rawValue: UInt32(EPOLLIN.rawValue))
    package static let writable = IOEvents(rawValue: UInt32(EPOLLOUT.rawValue))
    package static let priority = IOEvents(rawValue: UInt32(EPOLLPRI.rawValue))
    /// The peer shut down its writing side.
    package static let readHangup = IOEvents(rawValue: UInt32(EPOLLRDHUP.rawValue))
    /// Reported whether asked for or not.
    package static let hangup = IOEvents(rawValue: UInt32(EPOLLHUP.rawValue))
    /// Reported whether asked for or not.
    package static let error = IOEvents(rawValue: UInt32(EPOLLERR.rawValue))
    /// Report a condition once per change (EPOLLET) instead of while it holds.
    package static let edgeTriggered = IOEvents(rawValue: UInt32(EPOLLET.rawValue))
}

/// Watches one file descriptor for readiness. The descriptor stays the
/// caller's: the source neither closes it nor outlives the need for it
/// (cancel the source before closing the descriptor).
package final class IOSource: EventSource {
    /// Runs on the loop's thread with the source and the events that are ready.
    package typealias Handler = (IOSource, IOEvents) -> Void

    package let fd: Int32
    private let handler: Handler

    fileprivate init(fd: Int32, handler: @escaping Handler) {
        self.fd = fd
        self.handler = handler
    }

    /// Changes the events waited for, e.g. adds `.writable` while output is
    /// queued and drops it when the queue is empty.
    package func setEvents(_ events: IOEvents) throws(SDEventError) {
        try check("sd_event_source_set_io_events", sd_event_source_set_io_events(try live(), events.rawValue))
    }

    package func events() throws(SDEventError) -> IOEvents {
        var raw: UInt32 = 0
        try check("sd_event_source_get_io_events", sd_event_source_get_io_events(try live(), &raw))
        return IOEvents(rawValue: raw)
    }

    fileprivate func dispatch(_ revents: UInt32) {
        handler(self, IOEvents(rawValue: revents))
    }
}

extension SDEventLoop {
    /// Calls HANDLER whenever FD has one of EVENTS (level-triggered unless
    /// EVENTS has `.edgeTriggered`); `.hangup` and `.error` are always reported.
    package func addIO(
        fd: Int32, events: IOEvents, handler: @escaping IOSource.Handler
    ) throws(SDEventError) -> IOSource {
        try addIO(fd: fd, events: events, census: census, handler: handler)
    }

    func addIO(
        fd: Int32, events: IOEvents, census: SourceCensus, handler: @escaping IOSource.Handler
    ) throws(SDEventError) -> IOSource {
        assertConfined()
        let source = IOSource(fd: fd, handler: handler)
        try EventSource.register(source, census: census, "sd_event_add_io") { pointer, userdata in
            sd_event_add_io(event, pointer, fd, events.rawValue, { _, _, revents, userdata in
                SourceBox<IOSource>.source(of: userdata)?.dispatch(revents)
                return 0
            }, userdata)
        }
        return source
    }
}
