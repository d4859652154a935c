import CSystemd
import Glibc

/// A signal, read through a signalfd: its handler runs on the loop's thread
/// like any other, not in a signal handler. The signal must be blocked
/// (`pthread_sigmask`) in the thread that adds the source (sd-event refuses
/// with EBUSY otherwise) and, for a signal sent to the process, in every
/// thread, or another thread takes it.
package final class SignalSource: EventSource {
    /// Runs on the loop's thread with the source and the signal's number and
    /// sender.
    package typealias Handler = (SignalSource, ReceivedSignal) -> Void

    package let signal: Int32
    private let handler: Handler

    fileprivate init(signal: Int32, handler: @escaping Handler) {
        self.signal = signal
        self.handler = handler
    }

    fileprivate func dispatch(_ info: signalfd_siginfo) {
        handler(self, ReceivedSignal(signal: Int32(bitPattern: info.ssi_signo), senderPID: info.ssi_pid, senderUID: info.ssi_uid))
    }
}

/// What the signalfd said about one signal.
package struct ReceivedSignal: Equatable, Sendable {
    package let signal: Int32
    package let senderPID: UInt32
    package let senderUID: UInt32
}

extension SDEventLoop {
    /// Calls HANDLER each time SIGNAL arrives; see `SignalSource` for the mask.
    package func addSignal(_ signal: Int32, handler: @escaping SignalSource.Handler) throws(SDEventError) -> SignalSource {
        assertConfined()
        let source = SignalSource(signal: signal, handler: handler)
        try EventSource.register(source, census: census, "sd_event_add_signal") { pointer, userdata in
            sd_event_add_signal(event, pointer, signal, { _, info, userdata in
                if let info { SourceBox<SignalSource>.source(of: userdata)?.dispatch(info.pointee) }
                return 0
            }, userdata)
        }
        return source
    }
}
