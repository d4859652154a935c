import CSystemd
import Glibc

/// A child process's state changes (`sd_event_add_child`; sd-event 252 waits
/// on a pidfd and reaps the child after the handler). SIGCHLD must be blocked
/// in the thread that adds the first child source (sd-event refuses with
/// EBUSY otherwise); nothing else in the process may reap the child.
package final class ChildSource: EventSource {
    /// Runs on the loop's thread with the source and what became of the child.
    package typealias Handler = (ChildSource, ChildState) -> Void

    package let pid: pid_t
    private let handler: Handler

    fileprivate init(pid: pid_t, handler: @escaping Handler) {
        self.pid = pid
        self.handler = handler
    }

    fileprivate func dispatch(_ info: siginfo_t) {
        let status = info._sifields._sigchld.si_status
        let state: ChildState =
            switch info.si_code {
            case Int32(CLD_EXITED): .exited(status: status)
            case Int32(CLD_KILLED), Int32(CLD_DUMPED): .killed(signal: status)
            case Int32(CLD_STOPPED): .stopped(signal: status)
            default: .continued
            }
        handler(self, state)
    }
}

/// What became of a child process.
package enum ChildState: Equatable, Sendable {
    case exited(status: Int32)
    case killed(signal: Int32)
    case stopped(signal: Int32)
    case continued
}

extension SDEventLoop {
    /// Calls HANDLER when child PID changes state: it exits or is killed, and
    /// with `stops` also when it stops or continues. An exited child is reaped
    /// after the handler (then the source is off).
    package func addChild(
        _ pid: pid_t, stops: Bool = false, handler: @escaping ChildSource.Handler
    ) throws(SDEventError) -> ChildSource {
        assertConfined()
        let source = ChildSource(pid: pid, handler: handler)
        let options = WEXITED | (stops ? WSTOPPED | WCONTINUED : 0)
        try EventSource.register(source, census: census, "sd_event_add_child") { pointer, userdata in
            sd_event_add_child(event, pointer, pid, options, { _, info, userdata in
                if let info { SourceBox<ChildSource>.source(of: userdata)?.dispatch(info.pointee) }
                return 0
            }, userdata)
        }
        return source
    }
}
