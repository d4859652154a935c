import Foundation
import MediatorProtocol

/// Runs the real `mediatorctl` to its end (bounded) and keeps what it
/// printed and its exit status.
struct CLI {
    let daemon: DaemonProcess?
    let socketPath: String

    init(_ daemon: DaemonProcess) {
        self.daemon = daemon
        socketPath = daemon.socketPath
    }

    init(socketPath: String) {
        daemon = nil
        self.socketPath = socketPath
    }

    /// `mediatorctl VERB --socket PATH ARGS...`, in the test's environment
    /// unless `environment` is given.
    func run(
        _ verb: String, _ arguments: [String] = [], within bound: Duration = .seconds(30),
        environment: [String: String]? = nil
    ) throws -> ChildProcess.Outcome {
        try ChildProcess.run(
            Paths.mediatorctl, [verb, "--socket", socketPath] + arguments, within: bound,
            directory: daemon?.directory.path, environment: environment)
    }

    /// Runs `mediatorctl` with exactly these arguments (no --socket added).
    static func raw(_ arguments: [String], within bound: Duration = .seconds(30)) throws -> ChildProcess.Outcome {
        try ChildProcess.run(Paths.mediatorctl, arguments, within: bound)
    }

    /// A verb that must succeed with one JSON value on stdout.
    func json(_ verb: String, _ arguments: [String] = []) throws -> JSONValue {
        let outcome = try run(verb, arguments + ["--json"])
        guard outcome.status == 0 else { throw HarnessError("mediatorctl \(verb) failed: \(outcome)") }
        return try JSONValue.parse(outcome.stdout)
    }
}

extension ChildProcess.Outcome {
    /// The stdout's lines, each parsed as JSON.
    func jsonLines() throws -> [JSONValue] {
        try ChildProcess.lines(stdout).filter { !$0.isEmpty }.map { try JSONValue.parse($0) }
    }
}
