import Logging
import MediatorDaemon
import MediatorNATSBridge
import MediatorProtocol
import MediatorSystemd
import ServiceLifecycle
import UnixSignals

/// Re-reads the settings on SIGHUP and applies them without dropping any
/// connection (the NATS bridge restarts if its own changed), telling
/// systemd RELOADING=1 then READY=1. A bad config file is logged and the
/// running settings stay. When the binary on disk is no longer the one
/// running (a package upgrade), it then re-executes it in place.
struct ReloadService: Service, CustomStringConvertible {
    var description: String { "ReloadService" }
    let settings: DaemonSettings
    let server: MediatorServer
    let bridge: NATSBridge
    /// The bridge's settings from the flags and the config file's `"nats"`.
    let natsSettings: @Sendable (JSONValue?) throws -> NATSBridgeSettings?
    let notifier: SystemdNotifier
    let logger: Logger
    /// ``DaemonSettings/Loaded/startOnlyMembers(socketFlag:metricsListenFlag:)``
    /// of the settings as loaded now, and as they were at start.
    let startOnlyMembers: @Sendable (DaemonSettings.Loaded) -> [String: String]
    let startOnlyAtStart: [String: String]
    /// SIGHUP, trapped before the server starts (see ``ReexecSignalService``).
    let hangups: UnixSignalsSequence

    func run() async throws {
        for await _ in hangups.cancelOnGracefulShutdown() {
            notifier.reloading()
            do {
                let loaded = try settings.load()
                // Checked before anything is applied: a bad "nats" member keeps every running setting.
                let bridgeSettings = try natsSettings(loaded.natsFromConfig)
                let startOnly = startOnlyMembers(loaded)
                for name in Set(startOnly.keys).union(startOnlyAtStart.keys).sorted()
                where startOnly[name] != startOnlyAtStart[name] {
                    logger.notice(
                        "config member \(name) changed; it is read at start only: restart mediatord to apply it",
                        metadata: ["running": "\(startOnlyAtStart[name] ?? "-")", "in the file": "\(startOnly[name] ?? "-")"])
                }
                await server.reload(loaded.configuration)
                bridge.reload(bridgeSettings)
                let (manifests, skipped) = settings.loadManifests(logger: logger)
                await server.reloadManifests(manifests, skipped: skipped)
                await server.loadPolicy(settings.loadPolicy(logger: logger))
                notifier.ready(status: await StatusReporter.summary(server))
                // An upgrade installed another binary: carry on in it (issue 28).
                if server.binaryReplacedOnDisk {
                    logger.notice("the binary on disk is not the one running: re-executing it")
                    server.reexec()
                }
            } catch {
                logger.error("reload failed; the running settings stay", metadata: ["error": "\(error)"])
                notifier.ready(status: "reload failed: \(error)")
            }
        }
    }
}
