import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Signal handling that leaves the programs `serve` starts untouched.
///
/// The usual `signal(SIGTERM, SIG_IGN)` before a dispatch signal source is
/// inherited across exec, so every program run by `serve` would ignore
/// SIGTERM (and SIGPIPE). A caught signal is reset to the default action at
/// exec, so a do-nothing handler is installed instead; the dispatch source
/// still sees the signal.
enum Signals {
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    /// Keeps `signal` from killing the process (for SIGPIPE: writes then
    /// fail with EPIPE instead).
    static func catchWithoutAction(_ signal: Int32) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(signal, &action, nil)
    }

    /// Calls `handler` on SIGINT or SIGTERM. Call once, early.
    static func onTerminate(_ handler: @escaping @Sendable () -> Void) {
        for signal in [SIGINT, SIGTERM] {
            catchWithoutAction(signal)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            sources.append(source)
        }
    }
}
