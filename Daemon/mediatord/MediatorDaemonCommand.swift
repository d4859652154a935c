import ArgumentParser
// FoundationEssentials, not Foundation: the daemon needs no ICU data
// (tens of MiB of mapped memory, docs/benchmark.md "Footprint").
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import MediatorConfiguration
import MediatorDaemon
import MediatorMetrics
import MediatorNATSBridge
import MediatorProtocol
import MediatorSystemd
import NIOCore
import ServiceLifecycle
import UnixSignals
#if canImport(Glibc)
import Glibc
#endif

/// `mediatord`: the broker daemon, and its launcher layer: socket
/// activation, readiness and watchdog through sd_notify, the journal, SIGHUP.
/// Started by `MediatordMain`.
struct MediatorDaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediatord",
        abstract: "The Mediator broker: routes calls and events between component processes over a Unix socket.",
        discussion: """
            Limits come from their defaults, then the JSON file given by --config (members named like the \
            flags with underscores, e.g. {"max_connections": 100}), then the flags, which win. SIGHUP \
            re-reads them without dropping connections, and re-executes the binary in place when the file at \
            its path was replaced (an upgrade). SIGUSR2 (or mediatorctl daemon-reexec) re-executes it in place \
            always: same pid, every connection, call, registration and component kept.
            The socket is the one passed by systemd socket activation (FileDescriptorName=mediator), else \
            --socket, else $MEDIATOR_SOCKET, else /run/mediator/mediator.sock \
            (with --user: $XDG_RUNTIME_DIR/mediator/mediator.sock).
            """,
        version: MediatorVersion.current)

    @Option(help: "Path of the Unix socket to listen on.")
    var socket: String?

    @Flag(help: "Run as a user instance: the socket lives under $XDG_RUNTIME_DIR.")
    var user = false

    @Option(help: "A JSON file with settings; flags win over it.")
    var config: String?

    @Option(help: "Longest frame accepted, in bytes, without the LF (default 1048576).")
    var maxFrameBytes: Int?

    @Option(help: "Connections at once (default 4096).")
    var maxConnections: Int?

    @Option(help: "Calls in flight per connection (default 1024).")
    var maxCallsInFlight: Int?

    @Option(help: "Timeout of a call without timeout_ms, in milliseconds (default 30000).")
    var defaultTimeoutMs: Int?

    @Option(help: "Bytes queued toward a peer that does not read before it is disconnected (default 16777216).")
    var maxOutboundBytes: Int?

    @Option(help: "Consecutive bad frames before a peer is disconnected (default 1000).")
    var maxConsecutiveBadFrames: Int?

    @Option(help: "Milliseconds that calls in flight may take to finish on SIGTERM (default 2000).")
    var shutdownGraceMs: Int?

    @Option(help: "Connections per uid (default 512; uid 0 is exempt from per-uid quotas).")
    var maxConnectionsPerUid: Int?

    @Option(help: "Calls in flight per uid, held ones included (default 8192).")
    var maxCallsInFlightPerUid: Int?

    @Option(help: "Event patterns subscribed per uid (default 4096).")
    var maxSubscriptionsPerUid: Int?

    @Option(help: "Targets registered per uid (default 512).")
    var maxRegistrationsPerUid: Int?

    @Option(help: "Bytes queued toward all of a uid's connections before calls to it are refused (default 67108864).")
    var maxQueuedBytesPerUid: Int?

    @Option(help: "Bytes a uid's calls keep while pending: their ids, held calls' params (default 67108864).")
    var maxPendingBytesPerUid: Int?

    @Option(help: "File descriptors one message may carry, 16 to 253 (default 253, the kernel's limit).")
    var maxFdsPerMessage: Int?

    @Option(help: "File descriptors the daemon holds for one uid at once, not yet passed on (default 4096).")
    var maxFdsInFlightPerUid: Int?

    @Option(help: "Bytes one register may declare, its params as sent (default 262144).")
    var maxRegistrationBytes: Int?

    @Option(help: "Bytes all of a uid's registrations may declare together (default 4194304).")
    var maxRegisteredBytesPerUid: Int?

    @Option(help: "Milliseconds a component has after mediator.stop before it gets SIGTERM (default 3000).")
    var componentStopGraceMs: Int?

    @Option(help: "Calls answered this many milliseconds or more after forwarding go to the slow-call log of mediator/stats (default 1000).")
    var slowCallThresholdMs: Int?

    @Option(help: "After a crash whose connections survived, milliseconds a call to a target not registered again waits for it before target_not_found (default 1000).")
    var reregisterHoldMs: Int?

    @Option(help: ArgumentHelp(
        "Serve Prometheus metrics at GET /metrics on this Unix socket path (unix:PATH or a path with a /) or loopback HOST:PORT (127.0.0.1:9464, [::1]:9464, localhost:9464); off by default. Not reloaded on SIGHUP.",
        valueName: "address"))
    var metricsListen: String?

    @Option(help: "Metrics connections at once; more are closed when accepted (default 4).")
    var metricsMaxScrapes: Int?

    @Option(help: "Milliseconds a metrics connection may take, request to response, before it is closed (default 10000).")
    var metricsTimeoutMs: Int?

    @Flag(help: "Serve the per-uid series (mediator_uid_*) on a loopback TCP metrics port too; on a Unix socket, the monitor grant decides.")
    var metricsUidSeries = false

    @Option(help: "Socket file mode, octal (default 0666); not used with socket activation.")
    var socketMode: String = "0666"

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(help: "Where logs go: journal, stderr, or auto (the journal when stderr is connected to it).")
    var logTarget: LogTarget = .auto

    @Option(name: .customLong("components"), help: ArgumentHelp(
        "A folder of component manifests (repeatable); default /etc/mediator/components.d and /usr/lib/mediator/components.d, with --user ~/.config/mediator/components.d.",
        valueName: "dir"))
    var componentDirectories: [String] = []

    @Option(name: .customLong("policy"), help: ArgumentHelp(
        "A folder of access policy files (repeatable); default /etc/mediator/policy.d, with --user ~/.config/mediator/policy.d. Without any file, the default policy of docs/policy.md applies.",
        valueName: "dir"))
    var policyDirectories: [String] = []

    @OptionGroup(title: "Other hosts through NATS (docs/scale-out.md)")
    var nats: NATSFlags

    @Flag(help: "Send READY=1 only once every at-boot component has registered or failed.")
    var waitForBootComponents = false

    @Flag(help: "Under systemd, keep each connection in the service's fd store (FileDescriptorStoreMax= in the unit), so that a crash does not close it: the next daemon adopts them and tells every peer to register again.")
    var fdStore = false

    @Flag(help: .hidden)
    var testHooks = false

    enum LogTarget: String, ExpressibleByArgument, CaseIterable {
        case auto, journal, stderr
    }

    var settings: DaemonSettings {
        let flags: [(String, Int?)] = [
            ("max_frame_bytes", maxFrameBytes), ("max_connections", maxConnections),
            ("max_calls_in_flight", maxCallsInFlight), ("default_timeout_ms", defaultTimeoutMs),
            ("max_outbound_bytes", maxOutboundBytes), ("max_consecutive_bad_frames", maxConsecutiveBadFrames),
            ("shutdown_grace_ms", shutdownGraceMs), ("component_stop_grace_ms", componentStopGraceMs),
            ("max_connections_per_uid", maxConnectionsPerUid), ("max_calls_in_flight_per_uid", maxCallsInFlightPerUid),
            ("max_subscriptions_per_uid", maxSubscriptionsPerUid), ("max_registrations_per_uid", maxRegistrationsPerUid),
            ("max_queued_bytes_per_uid", maxQueuedBytesPerUid), ("max_pending_bytes_per_uid", maxPendingBytesPerUid),
            ("max_registration_bytes", maxRegistrationBytes), ("max_registered_bytes_per_uid", maxRegisteredBytesPerUid),
            ("slow_call_threshold_ms", slowCallThresholdMs),
            ("max_fds_per_message", maxFdsPerMessage), ("max_fds_in_flight_per_uid", maxFdsInFlightPerUid),
            ("reregister_hold_ms", reregisterHoldMs),
        ]
        var settings = DaemonSettings(configFile: config, testHooks: testHooks)
        settings.componentDirectories = componentDirectories.isEmpty
            ? ManifestLoader.defaultDirectories(userInstance: user, environment: ProcessInfo.processInfo.environment)
            : componentDirectories
        settings.policyDirectories = policyDirectories.isEmpty
            ? PolicyLoader.defaultDirectories(userInstance: user, environment: ProcessInfo.processInfo.environment)
            : policyDirectories
        for case let (key, value?) in flags { settings.flags[key] = value }
        return settings
    }

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("unknown log level \"\(logLevel)\"")
        }
        guard let mode = UInt32(socketMode, radix: 8) else { throw ValidationError("--socket-mode must be octal, e.g. 0660") }
        let toJournal = logTarget == .journal || (logTarget == .auto && JournalLogHandler.stderrIsJournal)
        LoggingSystem.bootstrap { label in
            let output: any LogHandler =
                toJournal ? JournalLogHandler(label: label) : StreamLogHandler.standardError(label: label)
            // Peers' strings (hello names, executable paths) reach log lines:
            // escaped here, for every target and call site, they cannot forge one.
            var handler = ControlEscapingLogHandler(wrapping: output)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "mediatord")
        // Settings that cannot be used: one line, not ArgumentParser's usage
        // text, with the exit status of a bad flag.
        func unusable(_ message: String) -> ExitCode {
            logger.error("\(message)")
            return ExitCode.validationFailure
        }

        let settings = self.settings
        let loaded: DaemonSettings.Loaded
        do { loaded = try settings.load() } catch { throw unusable("\(error)") }
        OpenFileLimit.raise(forConnections: loaded.configuration.maxConnections, logger: logger)

        // A predecessor that re-executed this image handed everything over (issue 28).
        let inheritance = ReexecInheritance.take(logger: logger)
        let listener: MediatorServer.Listener
        var storedConnections: [(name: String, fd: Int32)] = []
        var storedProcesses: [(name: String, fd: Int32)] = []
        do {
            var passed = inheritance == nil ? try SocketActivation.passed() : SocketActivation.Passed()
            // Component processes' pidfds and pipes (StoredProcess): the host adopts or ends them.
            storedProcesses = passed.stored.filter { StoredProcess.isProcessName($0.name) }
            passed.stored.removeAll { StoredProcess.isProcessName($0.name) }
            if let inheritance {
                listener = .inherited(inheritance)
            } else if let fd = passed.listener,
                let memfd = passed.stored.first(where: { $0.name == ConnectionStore.handOverName })?.fd
            {
                // A predecessor stopped for a restart handed everything over through the fd store.
                let store = FileDescriptorStore()
                for extra in passed.stored where extra.name == ConnectionStore.handOverName && extra.fd != memfd { close(extra.fd) }
                let found = ReexecInheritance.fromStore(
                    memfd: memfd, listener: fd, stored: passed.stored.filter { $0.name != ConnectionStore.handOverName },
                    remove: { store.remove(name: $0) }, logger: logger)
                listener = .inherited(found.inheritance)
                storedConnections = found.unclaimed
            } else if let fd = passed.listener {
                listener = .adopted(NIOBSDSocket.Handle(fd), description: "socket-activated fd \(fd)")
                storedConnections = passed.stored
            } else {
                listener = .path(try ProtocolConstants.socketPath(
                    explicit: socket ?? loaded.socketFromConfig, environment: ProcessInfo.processInfo.environment,
                    userInstance: user))
            }
        } catch let error as UserRuntimeDirectoryUnset {
            logger.error("--user: \(error.description)")
            throw ExitCode(1)
        } catch {
            logger.error("\(error)")
            throw ExitCode(1)
        }

        var metricsAddress: MetricsListenAddress?
        if let text = metricsListen ?? loaded.metricsListenFromConfig {
            do { metricsAddress = try MetricsListenAddress(parsing: text) } catch {
                throw unusable("--metrics-listen: \(error.description)")
            }
        }
        var metricsSettings = MetricsEndpoint.Settings()
        if let metricsMaxScrapes {
            guard metricsMaxScrapes > 0 else { throw ValidationError("--metrics-max-scrapes must be positive") }
            metricsSettings.maxScrapes = metricsMaxScrapes
        }
        if let metricsTimeoutMs {
            guard metricsTimeoutMs > 0 else { throw ValidationError("--metrics-timeout-ms must be positive") }
            metricsSettings.timeout = .milliseconds(Int64(metricsTimeoutMs))
        }
        metricsSettings.uidSeriesOnTCP = metricsUidSeries
        // Latencies are recorded per call only when something exports them.
        let exposition = metricsAddress.map { _ in PrometheusExposition() }

        // The NATS bridge's settings, now and at each SIGHUP (flags, then the config file's "nats").
        let natsFlags = nats
        let bridgeSocket = listener.socketPath ?? ""
        // This instance's socket when none is given: the default host name says only what differs from it.
        // (A user instance given its socket needs no XDG_RUNTIME_DIR; its default is then the system's.)
        let runtimeDirectory = ProcessInfo.processInfo.environment.filter { $0.key == "XDG_RUNTIME_DIR" }
        let defaultSocket = (try? ProtocolConstants.socketPath(explicit: nil, environment: runtimeDirectory, userInstance: user))
            ?? ProtocolConstants.socketPath(explicit: nil, environment: runtimeDirectory)
        let userUID = user ? getuid() : nil
        let natsSettings: @Sendable (JSONValue?) throws -> NATSBridgeSettings? = { config in
            try natsFlags.bridgeSettings(config: config, socketPath: bridgeSocket, defaultSocketPath: defaultSocket, userUID: userUID)
        }
        let bridge: NATSBridge
        do {
            bridge = NATSBridge(settings: try natsSettings(loaded.natsFromConfig), logger: Logger(label: "mediatord.nats"))
        } catch {
            throw unusable("NATS: \(error)")
        }

        let (socketFlag, metricsListenFlag) = (socket, metricsListen)
        let startOnlyMembers: @Sendable (DaemonSettings.Loaded) -> [String: String] = {
            $0.startOnlyMembers(socketFlag: socketFlag, metricsListenFlag: metricsListenFlag)
        }
        let notifier = SystemdNotifier()
        // Beat at half the interval, from the broker's own event loop, so a
        // stuck loop is caught and not just a dead process.
        let heartbeat = notifier.watchdogMicroseconds.map { microseconds in
            MediatorServer.Heartbeat(interval: .microseconds(Int64(microseconds / 2))) { notifier.watchdog() }
        }
        let units = UnitStarter(bus: user ? .user : .system)
        let reexec = reexecSettings(notifier: notifier, logger: logger)
        // Trapped before anything answers: a signal sent once the daemon
        // answers (a re-exec's new image included) must not meet its default action.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        let reexecSignals = await UnixSignalsSequence(trapping: .sigusr2)
        let (manifests, skippedManifests) = settings.loadManifests(logger: logger)
        // READY=1 waits for the metrics endpoint too, when one is asked for:
        // a scraper started after it must find it listening.
        let (metricsListening, metricsListened) = AsyncStream.makeStream(of: Void.self)
        if metricsAddress == nil { metricsListened.finish() }
        let server = try MediatorServer(
            configuration: loaded.configuration, listener: listener, socketMode: mode, logger: logger,
            manifests: manifests, skippedManifests: skippedManifests,
            units: UnitControl(start: { await units.start($0) }, stop: { await units.stop($0) }),
            waitForBootComponents: waitForBootComponents,
            heartbeat: heartbeat,
            latencyMetrics: exposition?.latencyFactory,
            reexec: reexec,
            // Stored connections passed in are removed from the store as they close, flag or not.
            connectionStore: (fdStore || !storedConnections.isEmpty || !storedProcesses.isEmpty) && notifier.isActive
                ? Self.connectionStore() : nil,
            storedConnections: storedConnections, storedProcesses: storedProcesses,
            // The units have KillMode=process (a restart keeps the components): a stop must end them itself.
            endsComponentsAtStop: notifier.isActive,
            restartProbe: fdStore && notifier.isActive ? Self.restartProbe(bus: user ? .user : .system) : nil,
            onReady: { server in
                // Cancelled when the group stops (an endpoint that cannot bind stops it).
                await cancelWhenGracefulShutdown {
                    for await _ in metricsListening { break }
                }
                notifier.ready(status: await StatusReporter.summary(server))
            },
            onStopping: { notifier.stopping() })

        await server.loadPolicy(settings.loadPolicy(logger: logger))
        await server.addStatisticsSection("nats") { bridge.statistics }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: ReexecSignalService(server: server, signals: reexecSignals), successTerminationBehavior: .ignore),
            .init(service: server, successTerminationBehavior: .gracefullyShutdownGroup),
            .init(service: ReloadService(
                    settings: settings, server: server, bridge: bridge, natsSettings: natsSettings, notifier: notifier,
                    logger: logger, startOnlyMembers: startOnlyMembers, startOnlyAtStart: startOnlyMembers(loaded),
                    hangups: hangups),
                  successTerminationBehavior: .ignore),
            .init(service: StatusReporter(server: server, notifier: notifier), successTerminationBehavior: .ignore),
        ]
        if let metricsAddress, let exposition {
            let endpoint = MetricsEndpoint(
                address: metricsAddress, exposition: exposition, settings: metricsSettings, logger: logger,
                uidSeriesGrant: { await server.grantsMonitor(toPeerOf: $0) }, releaseMemory: { ProcessMemory.trimMalloc() },
                onListening: { _ in
                    metricsListened.yield()
                    metricsListened.finish()
                }
            ) {
                await server.statisticsSnapshot()
            }
            // A metrics endpoint that cannot bind stops the daemon: asked for, it must work.
            services.append(.init(service: endpoint, successTerminationBehavior: .ignore, failureTerminationBehavior: .gracefullyShutdownGroup))
        }
        // Always there, idle without settings: a SIGHUP may turn it on. Its
        // failures are logged; local routing goes on.
        services.append(.init(service: bridge, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore))
        let group = ServiceGroup(
            configuration: .init(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        do {
            try await group.run()
        } catch {
            // One line, not ArgumentParser's dump: the socket's and the
            // metrics endpoint's errors say what, where and what to do.
            logger.error("\(error)")
            throw ExitCode(1)
        }
    }

    /// How `mediator/reexec`, SIGUSR2 and a reload that finds a new binary
    /// re-execute the daemon: its path as started, its arguments; systemd
    /// hears RELOADING=1 before, and READY=1 from the new image (or from
    /// this one when the exec failed). Nil when the path cannot be found.
    func reexecSettings(notifier: SystemdNotifier, logger: Logger) -> ReexecSettings? {
        let environment = ProcessInfo.processInfo.environment
        guard let image = ReexecImage.resolve(arguments: CommandLine.arguments, path: environment["PATH"]) else {
            logger.warning("the daemon's binary is not found from its argv[0]: mediator/reexec and SIGUSR2 are refused")
            return nil
        }
        // Test hook: a snapshot of a version no daemon reads, for the fallback's test.
        let snapshotVersion = testHooks ? environment["MEDIATORD_TEST_SNAPSHOT_VERSION"].flatMap { Int64($0) } : nil
        return ReexecSettings(image: image, announce: { announcement in
            switch announcement {
            case .starting: notifier.reloading()
            case .failed(let reason): notifier.ready(status: "re-exec failed: \(reason)")
            }
        }, snapshotVersion: snapshotVersion)
    }

    /// The fd store's calls for the host (systemd calls stay in Daemon/Systemd).
    static func connectionStore() -> ConnectionStore {
        let store = FileDescriptorStore()
        return ConnectionStore(
            store: { store.store($0, name: $1) }, remove: { store.remove(name: $0) },
            storeReporting: { store.store($0, name: $1) }, barrier: { store.barrier() })
    }

    /// At SIGTERM: a restart when the unit's job says so (asked over D-Bus,
    /// off the broker's loop); anything else, no answer included, is a stop.
    static func restartProbe(bus: UnitStarter.Bus) -> RestartProbe {
        RestartProbe {
            let job = UnitJob(bus: bus)
            switch await Task.detached(operation: { job.verdict() }).value {
            case .restart(let type): return .restart("systemd job \(type)")
            case .stop(let reason): return .stop(reason)
            }
        }
    }
}
