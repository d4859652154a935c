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

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sigusr2)
        for await _ in signals.cancelOnGracefulShutdown() { server.reexec() }
    }
}
