import Foundation
import MediatorProtocol

#if canImport(Glibc)
import Glibc
#endif

/// A real `mediatord` on a socket of its own in the test's folder.
final class DaemonProcess: @unchecked Sendable {
    let socketPath: String
    let process: ChildProcess
    let directory: TestDirectory

    var pid: pid_t { process.pid }

    /// Starts the daemon and waits until it answers `mediator/ping`
    /// (bounded); see `start(ready:)`.
    ///
    /// `launcher` runs first and execs the daemon (e.g. `prlimit --nofile=1024:`),
    /// so the pid is still the daemon's.
    init(
        directory: TestDirectory, socketPath: String? = nil, arguments: [String] = [],
        waitUntilReady: Bool = true, launcher: [String] = []
    ) throws {
        self.directory = directory
        self.socketPath = socketPath ?? directory.socket()
        let command = launcher + [Paths.mediatord, "--socket", self.socketPath, "--log-level", "debug"] + arguments
        process = try ChildProcess(command[0], Array(command.dropFirst()), label: "mediatord", directory: directory.path)
        if waitUntilReady {
            do {
                try self.waitUntilReady()
            } catch {
                process.kill()
                throw error
            }
        }
    }

    /// Polls `mediator/ping`: connect, send ping, read its reply; a new
    /// attempt every 20 ms, up to `bound`. Fails at once if the daemon exits.
    func waitUntilReady(within bound: Duration = .seconds(10)) throws {
        try waitUntil("mediatord to answer ping on \(socketPath)\(process.logTail())", within: bound) {
            if let ended = process.termination {
                throw HarnessError("mediatord exited (\(ended)) before answering\(process.logTail())")
            }
            return Self.answersPing(socketPath)
        }
    }

    /// Whether something answers `mediator/ping` on `path` right now.
    static func answersPing(_ path: String) -> Bool {
        guard let peer = try? RawPeer(path: path) else { return false }
        defer { peer.close() }
        guard let reply = try? peer.call("mediator", "ping", within: .seconds(2)) else { return false }
        return reply["result"] != nil
    }

    /// A new raw connection to this daemon.
    func connect() throws -> RawPeer { try RawPeer.connect(socketPath) }

    /// `mediator/list` as seen now.
    func list() throws -> [JSONValue] {
        let peer = try connect()
        defer { peer.close() }
        return try peer.result("mediator", "list")["targets"]?.arrayValue ?? []
    }

    /// The entry of `target` in `mediator/list`, nil if not registered.
    func listing(_ target: String) throws -> JSONValue? {
        try list().first { $0["target"]?.stringValue == target }
    }

    /// Waits until `mediator/list` shows `target` with at least `instances`
    /// instances.
    func waitForTarget(_ target: String, instances: Int = 1, within bound: Duration = .seconds(10)) throws {
        try waitUntil("\(target) to be listed with \(instances) instance(s)\(process.logTail())", within: bound) {
            let count = try listing(target)?["instances"]?.arrayValue?.count ?? 0
            return count >= instances
        }
    }

    /// Waits until `target` is gone from `mediator/list`.
    func waitForTargetGone(_ target: String, within bound: Duration = .seconds(10)) throws {
        try waitUntil("\(target) to be unlisted", within: bound) { try listing(target) == nil }
    }

    /// SIGTERM (graceful stop) without waiting.
    func terminate() { process.signal(SIGTERM) }

    /// SIGKILL and reap; for cleanup (idempotent).
    func kill() { process.kill() }
}

/// A real component process: the Python notes component, the Swift example
/// component, or `mediatorctl serve`.
final class ComponentProcess: @unchecked Sendable {
    let process: ChildProcess
    let target: String

    var pid: pid_t { process.pid }

    init(process: ChildProcess, target: String) {
        self.process = process
        self.target = target
    }

    /// `Examples/python/notes_component.py`; waits for its `ready` line
    /// unless `waitUntilReady` is false.
    static func notes(
        _ daemon: DaemonProcess, target: String = "Notes", pool: Bool = false, reconnect: Bool = false,
        waitUntilReady: Bool = true
    ) throws -> ComponentProcess {
        var arguments = ["-u", Paths.notesComponent, "--socket", daemon.socketPath, "--target", target]
        if pool { arguments += ["--mode", "pool"] }
        if reconnect { arguments.append("--reconnect") }
        let process = try ChildProcess(
            Paths.python, arguments, label: "notes-\(target)", directory: daemon.directory.path)
        let component = ComponentProcess(process: process, target: target)
        if waitUntilReady { try component.waitUntilReady() }
        return component
    }

    /// The Swift `example-component` (target Weather by default).
    static func swiftExample(
        _ daemon: DaemonProcess, target: String = "Weather", waitUntilReady: Bool = true
    ) throws -> ComponentProcess {
        let process = try ChildProcess(
            Paths.exampleComponent, ["--socket", daemon.socketPath, "--target", target],
            label: "example-\(target)", directory: daemon.directory.path)
        let component = ComponentProcess(process: process, target: target)
        if waitUntilReady { try component.waitUntilReady() }
        return component
    }

    /// `mediatorctl serve TARGET --exec PROGRAM --action ...`; it prints no
    /// `ready` on stdout, so readiness is `mediator/list` showing the target.
    static func serve(
        _ daemon: DaemonProcess, target: String, program: String, actions: [String], extra: [String] = []
    ) throws -> ComponentProcess {
        let arguments =
            ["serve", "--socket", daemon.socketPath, target, "--exec", program]
            + actions.flatMap { ["--action", $0] } + extra
        let process = try ChildProcess(
            Paths.mediatorctl, arguments, label: "serve-\(target)", directory: daemon.directory.path)
        let component = ComponentProcess(process: process, target: target)
        do {
            try waitUntil("\(target) served by mediatorctl\(process.logTail())") {
                if let ended = process.termination {
                    throw HarnessError("mediatorctl serve ended (\(ended))\(process.logTail())")
                }
                return try daemon.listing(target) != nil
            }
        } catch {
            process.kill()
            throw error
        }
        return component
    }

    /// Waits for the `ready` line number `count` (a component prints it
    /// again after each re-registration).
    func waitUntilReady(count: Int = 1, within bound: Duration = .seconds(20)) throws {
        do {
            try process.waitForLine("ready", count: count, within: bound)
        } catch {
            if count == 1 { process.kill() }
            throw error
        }
    }

    func signal(_ signal: Int32) { process.signal(signal) }

    /// SIGKILL and reap; for cleanup (idempotent).
    func kill() { process.kill() }
}
