import ArgumentParser
import Foundation
import Logging
import MediatorDaemon
import MediatorProtocol
import ServiceLifecycle

/// `mediatord`: the broker daemon.
@main
struct MediatorDaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediatord",
        abstract: "The Mediator broker: routes calls and events between component processes over a Unix socket.",
        discussion: """
            Limits come from their defaults, then the JSON file given by --config (members named like the \
            flags with underscores, e.g. {"max_connections": 100}), then the flags, which win.
            The socket is --socket, else $MEDIATOR_SOCKET, else /run/mediator/mediator.sock \
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

    @Option(help: "Socket file mode, octal (default 0666).")
    var socketMode: String = "0666"

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("unknown log level \"\(logLevel)\"")
        }
        guard let mode = UInt32(socketMode, radix: 8) else { throw ValidationError("--socket-mode must be octal, e.g. 0660") }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "mediatord")

        var settings = DaemonConfiguration()
        var socketFromConfig: String?
        if let config {
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: config))
                let json = try JSONParser.parse(Array(data))
                try settings.apply(json: json)
                socketFromConfig = json["socket"]?.stringValue
            } catch {
                throw ValidationError("cannot use config \(config): \(error)")
            }
        }
        let flags: [(String, Int?)] = [
            ("max_frame_bytes", maxFrameBytes), ("max_connections", maxConnections),
            ("max_calls_in_flight", maxCallsInFlight), ("default_timeout_ms", defaultTimeoutMs),
            ("max_outbound_bytes", maxOutboundBytes), ("max_consecutive_bad_frames", maxConsecutiveBadFrames),
            ("shutdown_grace_ms", shutdownGraceMs),
        ]
        for (key, value) in flags {
            guard let value else { continue }
            guard value > 0 else { throw ValidationError("--\(key.replacingOccurrences(of: "_", with: "-")) must be positive") }
            do { try settings.set(key, Int64(value)) } catch { throw ValidationError("\(error)") }
        }

        let path = ProtocolConstants.socketPath(
            explicit: socket ?? socketFromConfig, environment: ProcessInfo.processInfo.environment, userInstance: user)
        let server = MediatorServer(configuration: settings, listener: .path(path), socketMode: mode, logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: server, successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        do {
            try await group.run()
        } catch let error as SocketFile.InUse {
            logger.error("\(error.description)")
            throw ExitCode(1)
        }
    }
}

