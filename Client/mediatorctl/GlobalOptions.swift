import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import MediatorClient
import MediatorProtocol

/// The options that every verb takes (`@OptionGroup`).
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The daemon's socket (default: $MEDIATOR_SOCKET, else /run/mediator/mediator.sock).",
        valueName: "path"))
    var socket: String?

    @Flag(name: .long, help: "Talk to the user instance at $XDG_RUNTIME_DIR/mediator/mediator.sock.")
    var user = false

    @Option(name: .long, help: ArgumentHelp(
        "How long to wait for a reply, in seconds (default: 30).", valueName: "seconds"))
    var timeout: Double?

    @Option(name: .long, help: ArgumentHelp("The name to give in hello (shown to components as the caller's name).",
                                            valueName: "name"))
    var name: String?

    @Flag(name: .long, help: "Print compact JSON (the default when stdout is not a terminal).")
    var json = false

    @Flag(name: .long, help: "Print indented JSON (the default on a terminal, but for the views of list, stats, describe and status).")
    var pretty = false

    static let defaultTimeout: Double = 30

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout.isFinite) {
            throw ValidationError("--timeout must be a positive number of seconds")
        }
        if json && pretty { throw ValidationError("--json and --pretty exclude each other") }
        if socket != nil && user { throw ValidationError("--socket and --user exclude each other") }
    }

    /// `--user` without `XDG_RUNTIME_DIR` is `unreachable` (exit status
    /// 69), as `systemctl --user` refuses: never the system instance instead.
    var socketPath: String {
        get throws(MediatorError) {
            do {
                return try ProtocolConstants.socketPath(
                    explicit: socket, environment: ProcessInfo.processInfo.environment, userInstance: user)
            } catch {
                throw MediatorError(.unreachable, "--user: \(error.description)")
            }
        }
    }

    /// The call timeout in seconds.
    var timeoutSeconds: Double { timeout ?? Self.defaultTimeout }

    var timeoutDuration: Duration { .milliseconds(Int64((timeoutSeconds * 1000).rounded(.up))) }

    var output: Output {
        let terminal = isatty(STDOUT_FILENO) != 0
        return Output(style: json ? .compact : pretty ? .pretty : (terminal ? .pretty : .compact),
                      prettyAsked: pretty, forPeople: !json && (pretty || terminal))
    }

    /// Connects (failure: `unreachable`, exit status 69), within the
    /// timeout: a daemon that accepts but does not answer `hello` in time is
    /// a `timeout` (exit status 1), as any other reply that does not come.
    /// `fds`: say `"fds": true` in `hello` (descriptors may be sent and received).
    func connect(fds: Bool = false) async throws(MediatorError) -> MediatorClient {
        let (path, name, seconds) = (try socketPath, name, timeoutSeconds)
        do {
            return try await Deadline.run(seconds: seconds) {
                try await MediatorClient.connect(socketPath: path, name: name, fds: fds)
            }
        } catch let error as MediatorError {
            if error.code == .timeout {
                throw MediatorError(.timeout, "\(path): no answer to hello within \(Output.seconds(seconds)) s")
            }
            throw error
        } catch {
            throw MediatorError(.unreachable, "\(path): \(error)")
        }
    }

    /// How long `withClient` waits for `body`.
    enum Wait {
        /// The timeout: for the daemon's own actions, which carry no
        /// `timeout_ms` and are answered at once unless the daemon hangs.
        case timeout
        /// The timeout and 2 s more: a backstop for calls that carry
        /// `timeout_ms`, which the daemon answers with `timeout` itself.
        case backstop
        /// No limit (`stream`: the timeout applies to each response).
        case unlimited
    }

    /// Connects (with `"fds": true` when `fds`), runs `body`, closes, and
    /// turns a MediatorError into the printed message and exit status.
    func withClient<T: Sendable>(
        wait: Wait, fds: Bool = false,
        _ body: @Sendable @escaping (MediatorClient) async throws -> T
    ) async throws -> T {
        let client: MediatorClient
        do {
            client = try await connect(fds: fds)
        } catch {
            throw output.fail(error)
        }
        do {
            let value: T
            switch wait {
            case .timeout: value = try await Deadline.run(seconds: timeoutSeconds) { try await body(client) }
            case .backstop: value = try await Deadline.run(seconds: timeoutSeconds + 2) { try await body(client) }
            case .unlimited: value = try await body(client)
            }
            await client.close()
            return value
        } catch let error as MediatorError {
            await client.close()
            throw output.fail(error)
        } catch {
            await client.close()
            throw error
        }
    }
}

/// Races an operation against a clock: a reply that does not come in time is
/// the error `timeout`, as if the daemon had said so.
enum Deadline {
    static func run<T: Sendable>(
        seconds: Double, _ body: @Sendable @escaping () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
                throw MediatorError(.timeout, "no reply within \(Output.seconds(seconds)) s")
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }
}
