import Foundation
import Glibc

// Starting, reading, reaping and stopping child processes. Every child dies
// with the tool that started it: on a normal end by `Children.stop`, on a
// signal by ChildTable's handlers, and if the tool itself dies, by the kernel
// (PR_SET_PDEATHSIG, set in each child the tool starts from its own
// executable, and through `ExecTrampoline` in programs it does not own).

public enum Children {
    /// The running executable, for starting it again in another role.
    public static func selfExecutable() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if n > 0 { return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return CommandLine.arguments[0]
    }

    /// `name` in this executable's folder, where `swift build` puts the
    /// package's other executables (mediatord).
    public static func nextToSelf(_ name: String) -> String {
        URL(fileURLWithPath: selfExecutable()).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// The first program named `name` on PATH.
    public static func onPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") where access("\(folder)/\(name)", X_OK) == 0 {
            return "\(folder)/\(name)"
        }
        return nil
    }

    /// Starts `argv` with stdin from /dev/null, its output as `output` says,
    /// and default signal dispositions and an empty mask (the tools ignore
    /// SIGPIPE, which children would otherwise inherit). Call it from the
    /// main thread only: PR_SET_PDEATHSIG follows the thread that started a child.
    public static func spawn(_ argv: [String], name: String, output: ChildProcess.Output = .inherit) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        var pipeFDs: [Int32] = [-1, -1]
        switch output {
        case .inherit:
            break
        case .pipe:
            guard pipe(&pipeFDs) == 0 else { throw ChildProcessError.sys("pipe") }
            _ = fcntl(pipeFDs[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(pipeFDs[1], F_SETFD, FD_CLOEXEC)
            posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], STDOUT_FILENO)
        case .appendTo(let path):
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGALRM] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        // A crashing Swift child should die at once, not wait in the backtracer.
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment["MEDIATOR_SOCKET"] = nil  // every program gets its socket explicitly
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, &attributes, cArgs, cEnv)
        let isPipe = pipeFDs[1] >= 0
        if isPipe { close(pipeFDs[1]) }
        guard rc == 0 else {
            if isPipe { close(pipeFDs[0]) }
            throw ChildProcessError.sys("cannot start \(argv[0])", rc)
        }
        ChildTable.add(pid)
        return ChildProcess(pid: pid, name: name, stdoutFD: isPipe ? pipeFDs[0] : nil)
    }

    /// Reads the child's stdout pipe until it closes (or until a line, if
    /// `untilNewline`), giving up at `deadline` (monotonic ns).
    public static func read(_ child: ChildProcess, until deadline: UInt64, untilNewline: Bool = false) throws -> String {
        guard let fd = child.stdoutFD else { throw ChildProcessError("\(child.name): its stdout is not a pipe") }
        var collected: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let now = monotonicNanos()
            guard now < deadline else { throw ChildProcessError("\(child.name): no answer in time") }
            var pollFD = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pollFD, 1, Int32(min((deadline - now) / 1_000_000 + 1, 1000)))
            if ready < 0 && errno != EINTR { throw ChildProcessError.sys("poll") }
            if ready <= 0 { continue }
            let n = Glibc.read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            collected += chunk[0..<n]
            if untilNewline && collected.contains(0x0A) { break }
        }
        return String(decoding: collected, as: UTF8.self)
    }

    /// Reaps the child if it has ended: its wait status, or nil while it runs.
    public static func reap(_ child: ChildProcess) -> Int32? {
        var status: Int32 = 0
        let rc = waitpid(child.pid, &status, WNOHANG)
        guard rc == child.pid || (rc < 0 && errno == ECHILD) else { return nil }
        ChildTable.remove(child.pid)
        return status
    }

    /// Whether the child still runs (one that ended is reaped).
    public static func isRunning(_ child: ChildProcess) -> Bool {
        reap(child) == nil
    }

    /// Waits for the child to end: its wait status, or nil after `timeout` seconds.
    public static func wait(_ child: ChildProcess, timeout: Double) -> Int32? {
        let deadline = monotonicNanos() + UInt64(timeout * 1e9)
        while true {
            if let status = reap(child) { return status }
            if monotonicNanos() >= deadline { return nil }
            usleep(2_000)
        }
    }

    /// Sends `signal`, waits up to `grace` seconds, then SIGKILL and waits
    /// again, and closes the stdout pipe. The wait status, or nil if the
    /// child could not be reaped.
    @discardableResult
    public static func stop(_ child: ChildProcess, signal: Int32 = SIGTERM, grace: Double = 3) -> Int32? {
        kill(child.pid, signal)
        var status = wait(child, timeout: grace)
        if status == nil {
            kill(child.pid, SIGKILL)
            status = wait(child, timeout: 5)
        }
        if let fd = child.stdoutFD { close(fd) }
        return status
    }

    /// A wait status in words, for messages.
    public static func describe(status: Int32) -> String {
        let signal = status & 0x7F
        if signal == 0 { return "exit status \((status >> 8) & 0xFF)" }
        return "signal \(signal)"
    }
}
