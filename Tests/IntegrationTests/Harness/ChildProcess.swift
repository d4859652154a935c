import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real child process started with posix_spawn in a process group of its
/// own (so that killing the group also reaches what it started, e.g. the
/// programs `mediatorctl serve` runs), with default signal dispositions and
/// an empty signal mask, stdin from /dev/null (or a file), and stdout and
/// stderr into files that the test polls.
///
/// Every child is also kept in a global registry that an `atexit` handler
/// kills, in case the test process exits without running a test's cleanup.
final class ChildProcess: @unchecked Sendable {
    let pid: pid_t
    let label: String
    let stdoutPath: String
    let stderrPath: String
    let command: [String]

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later),
    /// which Swift's Glibc module does not declare: looked up once.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(
            symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    private let lock = NSLock()
    private var waitStatus: Int32?
    private var reapedUnknown = false

    enum Termination: Equatable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)
        case unknown

        var description: String {
            switch self {
            case .exited(let code): "exit status \(code)"
            case .signaled(let signal): "signal \(signal)"
            case .unknown: "unknown termination"
            }
        }
    }

    init(
        _ executable: String, _ arguments: [String], label: String, directory: String,
        environment: [String: String]? = nil, stdinPath: String? = nil
    ) throws {
        self.label = label
        self.command = [executable] + arguments
        let unique = Self.counter.next()
        stdoutPath = "\(directory)/\(label).\(unique).out"
        stderrPath = "\(directory)/\(label).\(unique).err"

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdinPath ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // Nothing else: a descriptor another test opened without close-on-exec
        // (or in the instant before setting it) would otherwise count
        // against a child's file limit and keep the peer of a socket open.
        if let addCloseFrom = Self.addCloseFrom { _ = addCloseFrom(&actions, 3) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGQUIT, SIGUSR1, SIGUSR2] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var variables = environment ?? ProcessInfo.processInfo.environment
        variables["MEDIATOR_SOCKET"] = nil  // every program gets --socket
        let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }

        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw HarnessError("cannot start \(executable): \(String(cString: strerror(result)))")
        }
        pid = child
        Self.registry.insert(child)
    }

    private static let counter = Counter()

    // MARK: - State

    /// Reaps the child if it has exited; its termination, nil while it runs.
    var termination: Termination? {
        lock.lock()
        defer { lock.unlock() }
        return reapLocked(block: false)
    }

    var isRunning: Bool { termination == nil }

    private func reapLocked(block: Bool) -> Termination? {
        if let waitStatus { return Self.decode(waitStatus) }
        if reapedUnknown { return .unknown }
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, block ? 0 : WNOHANG)
            if result == pid {
                waitStatus = status
                Self.registry.remove(pid)
                return Self.decode(status)
            }
            if result == 0 { return nil }
            if errno == EINTR { continue }
            // ECHILD: someone else reaped it.
            reapedUnknown = true
            Self.registry.remove(pid)
            return .unknown
        }
    }

    private static func decode(_ status: Int32) -> Termination {
        let signal = status & 0x7f
        if signal == 0 { return .exited((status >> 8) & 0xff) }
        return .signaled(signal)
    }

    // MARK: - Waiting

    /// Waits (bounded) for the child to exit.
    @discardableResult
    func waitForExit(within bound: Duration = .seconds(10)) throws -> Termination {
        var ended: Termination?
        try waitUntil("\(label) (pid \(pid)) to exit\(logTail())", within: bound, every: .milliseconds(5)) {
            ended = termination
            return ended != nil
        }
        return ended!
    }

    /// Sends `signal` to the child's process group (the child is its leader).
    func signal(_ signal: Int32) {
        guard isRunning else { return }
        Glibc.kill(-pid, signal)
        Glibc.kill(pid, signal)
    }

    /// SIGKILL to the group and reap. Safe to call any number of times; for
    /// cleanup.
    func kill() {
        if isRunning {
            Glibc.kill(-pid, SIGKILL)
            Glibc.kill(pid, SIGKILL)
        }
        _ = try? waitForExit(within: .seconds(10))
    }

    // MARK: - Output

    var stdout: String { Self.read(stdoutPath) }
    var stderr: String { Self.read(stderrPath) }
    var stdoutLines: [String] { Self.lines(stdout) }
    var stderrLines: [String] { Self.lines(stderr) }

    /// Waits until stdout has at least `count` lines equal to `line`.
    func waitForLine(_ line: String, count: Int = 1, within bound: Duration = .seconds(10)) throws {
        try waitUntil("\(count) line(s) \"\(line)\" from \(label)\(logTail())", within: bound) {
            if stdoutLines.filter({ $0 == line }).count >= count { return true }
            if let ended = termination {
                throw HarnessError("\(label) ended (\(ended)) before printing \"\(line)\"\(logTail())")
            }
            return false
        }
    }

    /// Waits until stdout has at least `count` lines, and returns them.
    func waitForLines(_ count: Int, within bound: Duration = .seconds(10)) throws -> [String] {
        var lines: [String] = []
        try waitUntil("\(count) line(s) from \(label)\(logTail())", within: bound) {
            lines = stdoutLines
            return lines.count >= count
        }
        return lines
    }

    /// The end of both outputs, for failure messages.
    func logTail(_ characters: Int = 2000) -> String {
        let out = String(stdout.suffix(characters))
        let err = String(stderr.suffix(characters))
        return "\n--- \(label) stdout ---\n\(out)\n--- \(label) stderr ---\n\(err)"
    }

    static func read(_ path: String) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Complete lines only (a line still being written is left out).
    static func lines(_ text: String) -> [String] {
        var parts = text.components(separatedBy: "\n")
        parts.removeLast()  // after the last LF: empty, or an unfinished line
        return parts.map { $0.hasSuffix("\r") ? String($0.dropLast()) : $0 }
    }

    // MARK: - One-shot runs

    struct Outcome: CustomStringConvertible {
        var termination: Termination
        var stdout: String
        var stderr: String
        var status: Int32? {
            if case .exited(let code) = termination { return code }
            return nil
        }
        var description: String { "\(termination)\n--- stdout ---\n\(stdout)\n--- stderr ---\n\(stderr)" }
    }

    /// Runs a program to its end (bounded; killed when the bound passes).
    static func run(
        _ executable: String, _ arguments: [String], within bound: Duration = .seconds(30),
        directory: String? = nil, environment: [String: String]? = nil
    ) throws -> Outcome {
        let ownDirectory = directory == nil ? try TestDirectory() : nil
        defer { ownDirectory?.remove() }
        let label = URL(fileURLWithPath: executable).lastPathComponent
        let child = try ChildProcess(
            executable, arguments, label: label, directory: directory ?? ownDirectory!.path, environment: environment)
        defer { child.kill() }
        let termination = try child.waitForExit(within: bound)
        return Outcome(termination: termination, stdout: child.stdout, stderr: child.stderr)
    }

    // MARK: - Registry

    static let registry = Registry()

    final class Registry: @unchecked Sendable {
        private let lock = NSLock()
        private var pids: Set<pid_t> = []
        private var installed = false

        func insert(_ pid: pid_t) {
            lock.lock()
            pids.insert(pid)
            if !installed {
                installed = true
                atexit { ChildProcess.registry.killAll() }
            }
            lock.unlock()
        }

        func remove(_ pid: pid_t) {
            lock.lock()
            pids.remove(pid)
            lock.unlock()
        }

        func killAll() {
            lock.lock()
            let all = pids
            lock.unlock()
            for pid in all {
                Glibc.kill(-pid, SIGKILL)
                Glibc.kill(pid, SIGKILL)
            }
        }
    }
}
