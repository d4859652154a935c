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

/// `mediatorctl serve`: any executable as a component, like OpenWrt's rpcd
/// exec plugins.
///
/// For each call it runs `PROGRAM ACTION` (ACTION always follows the action
/// name rules: anything else is answered `invalid_params` and nothing runs)
/// with the params JSON (and a LF) on
/// stdin and `MEDIATOR_CALLER_PID/UID/GID` (and `MEDIATOR_CALLER_NAME`,
/// `MEDIATOR_TARGET`, `MEDIATOR_ACTION`) in its environment:
///
/// - exit 0: stdout is the result: JSON as is, empty → `null`, anything else
///   → the trimmed text as a string;
/// - a non-zero exit: error `exec_failed`, message = stderr (trimmed), data
///   `{"status": N}` (killed by a signal: `{"signal": N}`);
/// - a cancelled call (timeout, `mediator.cancel`, caller gone): the
///   program's process group gets SIGTERM, and SIGKILL 2 s later.
struct ExecServer: Sendable {
    var target: String
    var program: URL
    var actions: [String]
    var description: String?
    var pool: Bool
    var socketPath: String
    var name: String?

    static let execFailed = ErrorCode("exec_failed")

    func run() async throws {
        var component = Component(target: target, description: description, mode: pool ? .pool : .exclusive)
        let program = program
        if actions.isEmpty {
            component.handleNotFound { action, params, context in
                try await Self.execute(program, action: action, params: params, context: context)
            }
        } else {
            for action in actions {
                component.addAction(action) { context in
                    try await Self.execute(program, action: action, params: context.params, context: context)
                }
            }
        }
        let target = target
        component.socketPath = socketPath
        component.connectionName = name
        component.onRegistered = { Output.log("serving \(target)") }
        try await component.run()
    }

    /// Runs the program once for a call.
    static func execute(_ program: URL, action: String, params: JSONValue, context: CallContext)
        async throws -> JSONValue
    {
        // Before anything else: the action becomes argv[1] and MEDIATOR_ACTION.
        let action = try Component.validatedActionName(action, member: "action")
        var environment = ProcessInfo.processInfo.environment
        for key in ["PID", "UID", "GID", "NAME"] { environment["MEDIATOR_CALLER_" + key] = nil }
        if let caller = context.caller {
            environment["MEDIATOR_CALLER_PID"] = String(caller.pid)
            environment["MEDIATOR_CALLER_UID"] = String(caller.uid)
            environment["MEDIATOR_CALLER_GID"] = String(caller.gid)
            environment["MEDIATOR_CALLER_NAME"] = caller.name
        }
        environment["MEDIATOR_TARGET"] = context.target
        environment["MEDIATOR_ACTION"] = action
        let run = try ExecRun(program: program, action: action, environment: environment,
                              input: Array((params.jsonText + "\n").utf8))
        let outcome: ExecRun.Outcome
        do {
            outcome = try await run.run()
        } catch let error as ExecRun.SpawnError {
            throw MediatorError(execFailed, "cannot run \(program.path): \(error)", data: ["status": 127])
        }
        return try result(of: outcome, program: program)
    }

    /// The reply for a finished run.
    static func result(of outcome: ExecRun.Outcome, program: URL) throws(MediatorError) -> JSONValue {
        let stdout = String(decoding: outcome.stdout, as: UTF8.self).trimmingWhitespace
        let stderr = String(decoding: outcome.stderr, as: UTF8.self).trimmingWhitespace
        switch outcome.termination {
        case .exited(0):
            if stdout.isEmpty { return .null }
            return (try? JSONParser.parse(stdout)) ?? .string(stdout)
        case .exited(let status):
            throw MediatorError(
                execFailed, stderr.isEmpty ? "\(program.lastPathComponent) exited with status \(status)" : stderr,
                data: ["status": .int(Int64(status))])
        case .signaled(let signal):
            throw MediatorError(
                execFailed, stderr.isEmpty ? "\(program.lastPathComponent) was killed by signal \(signal)" : stderr,
                data: ["signal": .int(Int64(signal))])
        }
    }

    /// The program as given: a path when it has a `/`, else looked up in
    /// `PATH`; nil when it is not an executable file.
    static func resolve(_ program: String) -> URL? {
        func executable(_ path: String) -> Bool {
            var info = stat()
            return stat(path, &info) == 0 && info.st_mode & S_IFMT != S_IFDIR && access(path, X_OK) == 0
        }
        if program.contains("/") {
            let url = URL(fileURLWithPath: program).standardizedFileURL
            return executable(url.path) ? url : nil
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = String(directory) + "/" + program
            if executable(candidate) { return URL(fileURLWithPath: candidate) }
        }
        return nil
    }
}
