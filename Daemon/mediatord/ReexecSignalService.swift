import MediatorDaemon
import ServiceLifecycle
import UnixSignals

/// SIGUSR2 re-executes the daemon's binary in place, keeping every
/// connection, call and registration (issue 28): the trigger without
/// systemd or `mediatorctl`, as `kill -USR2` on dbus-broker-less systems
/// and in maintainer scripts.
struct ReexecSignalService: Service, CustomStringConvertible {
    var description: String { "ReexecSignalService" }
    let server: MediatorServer
    /// Trapped before the server starts, so that a SIGUSR2 sent once it
    /// answers (after a re-exec too) finds the handler in place.
    let signals: UnixSignalsSequence

    func run() async throws {
        for await _ in signals.cancelOnGracefulShutdown() { server.reexec() }
    }
}
