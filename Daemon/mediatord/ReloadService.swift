import Logging
import MediatorDaemon
import MediatorSystemd
import ServiceLifecycle
import UnixSignals

/// Re-reads the settings on SIGHUP and applies them without dropping any
/// connection, telling systemd RELOADING=1 then READY=1. A bad config file
/// is logged and the running settings stay.
struct ReloadService: Service, CustomStringConvertible {
    var description: String { "ReloadService" }
    let settings: DaemonSettings
    let server: MediatorServer
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        for await _ in hangups.cancelOnGracefulShutdown() {
            notifier.reloading()
            do {
                await server.reload(try settings.load().configuration)
                await server.reloadManifests(settings.loadManifests(logger: logger))
                await server.loadPolicy(settings.loadPolicy(logger: logger))
                notifier.ready(status: await StatusReporter.summary(server))
            } catch {
                logger.error("reload failed; the running settings stay", metadata: ["error": "\(error)"])
                notifier.ready(status: "reload failed: \(error)")
            }
        }
    }
}
