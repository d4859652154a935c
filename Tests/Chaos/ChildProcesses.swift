import Foundation
import Glibc

// Starting, signalling and reaping the child processes. Every child dies with
// the chaos run: on a normal end by `Children.stop`, on SIGINT/SIGTERM/SIGHUP
// or the run's watchdog by a handler, and if the run itself dies, by the
// kernel (PR_SET_PDEATHSIG, set in each child we start, directly or through
// the `__exec` trampoline).

struct ChaosFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    static func sys(_ what: String, _ code: Int32 = errno) -> ChaosFailure {
        ChaosFailure("\(what): \(String(cString: strerror(code)))")
    }
}

/// Nanoseconds on the monotonic clock.
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Writes a line on stderr; usable from anywhere but a signal handler.
func note(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// The pids of live children in a fixed table that a signal handler can walk.
enum ChildTable {
    static let slots = 256
    nonisolated(unsafe) static let pids: UnsafeMutablePointer<pid_t> = {
        let table = UnsafeMutablePointer<pid_t>.allocate(capacity: slots)
        table.initialize(repeating: 0, count: slots)
        return table
    }()

    static func add(_ pid: pid_t) {
        for i in 0..<slots where pids[i] == 0 { pids[i] = pid; return }
    }

    static func remove(_ pid: pid_t) {
        for i in 0..<slots where pids[i] == pid { pids[i] = 0 }
    }

    static func killAll() {
        for i in 0..<slots where pids[i] > 0 { kill(pids[i], SIGKILL) }
    }

    /// Kills every child and exits; what SIGINT, SIGTERM, SIGHUP and the
    /// watchdog (SIGALRM) do. The work directory is kept for its logs.
    static func installSignalHandlers() {
        _ = pids  // allocate outside the handler
        for sig in [SIGINT, SIGTERM, SIGHUP, SIGALRM] {
            signal(sig) { received in
                let message: StaticString = received == SIGALRM
                    ? "mediator-chaos: FAIL: the run did not finish within its overall bound (something hangs)\n"
                    : "mediator-chaos: interrupted\n"
                _ = write(STDERR_FILENO, message.utf8Start, message.utf8CodeUnitCount)
                ChildTable.killAll()
                _exit(received == SIGALRM ? 1 : 128 + received)
            }
        }
    }
}

/// Linux-only calls that Swift's Glibc module does not import (they need _GNU_SOURCE).
enum LinuxExtras {
    nonisolated(unsafe) private static let handle = dlopen(nil, RTLD_NOW)

    /// The kernel sends SIGKILL to this process when its parent (the thread
    /// that started it) dies.
    static func dieWithParent() {
        typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
        guard let symbol = dlsym(handle, "prctl") else { return }
        let prctl = unsafeBitCast(symbol, to: Prctl.self)
        _ = prctl(1 /* PR_SET_PDEATHSIG */, UInt(SIGKILL), 0, 0, 0)
        if getppid() == 1 { _exit(1) }  // the parent is already gone
    }
}

/// `mediator-chaos __exec PROGRAM ARGS...`: sets PR_SET_PDEATHSIG and
/// becomes PROGRAM, so that a program we do not own dies with the run too.
enum ExecTrampoline {
    static let verb = "__exec"

    static func run(_ argv: [String]) -> Never {
        LinuxExtras.dieWithParent()
        let cArgs = argv.map { strdup($0) } + [nil]
        execv(argv[0], cArgs)
        perror("execv \(argv[0])")
        _exit(127)
    }
}

enum Children {
    /// The running executable, for starting it again in another role.
    static func selfExecutable() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if n > 0 { return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return CommandLine.arguments[0]
    }

    /// Starts `argv` with stdin from /dev/null and stdout and stderr appended
    /// to `logPath`, with default signal dispositions (this process ignores
    /// SIGPIPE, which children would otherwise inherit). Call it from the
    /// main thread only: PR_SET_PDEATHSIG follows the thread that started a child.
    static func spawn(_ argv: [String], logPath: String, environment extra: [String: String] = [:]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO)

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
        for (key, value) in extra { environment[key] = value }
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, &attributes, cArgs, cEnv)
        guard rc == 0 else { throw ChaosFailure.sys("cannot start \(argv[0])", rc) }
        ChildTable.add(pid)
        return pid
    }

    /// Exit status in words.
    static func describe(status: Int32) -> String {
        let signal = status & 0x7F
        if signal == 0 { return "exit status \((status >> 8) & 0xFF)" }
        return "signal \(signal)"
    }

    /// Reaps one child if it has ended; its wait status, or nil while it runs.
    static func reap(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        let rc = waitpid(pid, &status, WNOHANG)
        guard rc == pid || (rc < 0 && errno == ECHILD) else { return nil }
        ChildTable.remove(pid)
        return status
    }

    /// Sends `signal`, waits up to `grace` seconds, then SIGKILL and waits.
    /// The wait status, or nil if it could not be reaped.
    @discardableResult
    static func stop(_ pid: pid_t, signal: Int32 = SIGTERM, grace: Double = 5) -> Int32? {
        kill(pid, signal)
        let deadline = monotonicNanos() + UInt64(grace * 1e9)
        while monotonicNanos() < deadline {
            if let status = reap(pid) { return status }
            usleep(5_000)
        }
        kill(pid, SIGKILL)
        let hardDeadline = monotonicNanos() + 5_000_000_000
        while monotonicNanos() < hardDeadline {
            if let status = reap(pid) { return status }
            usleep(5_000)
        }
        return nil
    }

    /// The first program named `name` on PATH.
    static func onPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") where access("\(folder)/\(name)", X_OK) == 0 {
            return "\(folder)/\(name)"
        }
        return nil
    }
}

/// Figures from /proc for one process.
enum ProcStats {
    /// The whole of a /proc file, read to its end (they report a size of 0,
    /// and large ones such as smaps come in several reads).
    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                bytes.append(contentsOf: chunk[0..<n])
            } else if n == 0 {
                return String(decoding: bytes, as: UTF8.self)
            } else if errno != EINTR {
                return nil
            }
        }
    }

    /// A `kB` figure from /proc/PID/status, such as VmRSS or VmHWM.
    static func statusKB(_ pid: pid_t, _ key: String) -> Int? {
        guard let status = read("/proc/\(pid)/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(key + ":") {
            return Int(line.dropFirst(key.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }

    /// utime + stime of every thread, in seconds.
    static func cpuSeconds(_ pid: pid_t) -> Double? {
        guard let stat = read("/proc/\(pid)/stat") else { return nil }
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        return (utime + stime) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Threads of the process.
    static func threads(_ pid: pid_t) -> Int? { statusKB(pid, "Threads") }
}
