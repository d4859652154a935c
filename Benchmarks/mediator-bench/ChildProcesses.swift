import Foundation
import Glibc

// Starting, reading, stopping and measuring the child processes. Every child
// is killed when the bench exits: on normal exit by `stop`, on SIGINT/SIGTERM/
// SIGHUP by a handler, and if the bench dies, by the kernel (PR_SET_PDEATHSIG,
// set in the children; mediatord is started through a trampoline that sets it).

/// The pids of live children, in a fixed table that a signal handler can walk.
enum ChildTable {
    static let slots = 64
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

    /// Files that a signal handler removes (the sockets, then the work directory), as C strings.
    nonisolated(unsafe) private static var cleanupPaths: [UnsafeMutablePointer<CChar>] = []

    static func removeOnSignal(_ paths: [String]) {
        cleanupPaths = paths.map { strdup($0)! }
    }

    static func installSignalHandlers() {
        _ = pids  // allocate outside the handler
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig) { received in
                ChildTable.killAll()
                for path in ChildTable.cleanupPaths { unlink(path); rmdir(path) }
                _exit(128 + received)
            }
        }
    }
}

/// Linux-only calls that Swift's Glibc module does not import (they need _GNU_SOURCE).
enum LinuxExtras {
    nonisolated(unsafe) private static let handle = dlopen(nil, RTLD_NOW)

    /// The kernel sends SIGKILL to this process when its parent dies.
    static func dieWithParent() {
        typealias Prctl = @convention(c) (Int32, UInt, UInt, UInt, UInt) -> Int32
        guard let symbol = dlsym(handle, "prctl") else { return }
        let prctl = unsafeBitCast(symbol, to: Prctl.self)
        _ = prctl(1 /* PR_SET_PDEATHSIG */, UInt(SIGKILL), 0, 0, 0)
        if getppid() == 1 { _exit(1) }  // the parent is already gone
    }

    /// Restricts this process (and the children it starts later) to `cpus`; nil means every CPU.
    @discardableResult
    static func setAffinity(_ cpus: [Int]?) -> Bool {
        typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer) -> Int32
        guard let symbol = dlsym(handle, "sched_setaffinity") else { return false }
        let setAffinity = unsafeBitCast(symbol, to: SetAffinity.self)
        var set = cpu_set_t()
        let all = Array(0..<Int(sysconf(Int32(_SC_NPROCESSORS_CONF))))
        withUnsafeMutableBytes(of: &set) { bytes in
            for cpu in cpus ?? all where cpu >= 0 && cpu < bytes.count * 8 {
                bytes[cpu / 8] |= UInt8(1) << UInt8(cpu % 8)
            }
        }
        return withUnsafeBytes(of: &set) { setAffinity(0, $0.count, $0.baseAddress!) } == 0
    }
}

struct ChildProcess {
    let pid: pid_t
    let name: String
    /// Read end of a pipe on the child's stdout, or -1.
    var stdoutFD: Int32
}

enum Children {
    /// The running executable, for starting it again in another role.
    static func selfExecutable() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if n > 0 { return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return CommandLine.arguments[0]
    }

    static func spawn(_ argv: [String], name: String, captureStdout: Bool) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeFDs: [Int32] = [-1, -1]
        if captureStdout {
            guard pipe(&pipeFDs) == 0 else { throw BenchError.sys("pipe") }
            _ = fcntl(pipeFDs[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(pipeFDs[1], F_SETFD, FD_CLOEXEC)
            posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], STDOUT_FILENO)
        }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)

        // A crashing child should die at once, not wait in the Swift backtracer.
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let envStrings = environment.map { "\($0.key)=\($0.value)" }

        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = envStrings.map { strdup($0) } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, nil, cArgs, cEnv)
        if captureStdout { close(pipeFDs[1]) }
        guard rc == 0 else {
            if captureStdout { close(pipeFDs[0]) }
            throw BenchError.sys("cannot start \(argv[0])", rc)
        }
        ChildTable.add(pid)
        return ChildProcess(pid: pid, name: name, stdoutFD: captureStdout ? pipeFDs[0] : -1)
    }

    /// Reads the child's stdout until it closes (or until a line, if `untilNewline`),
    /// giving up at `deadline` (monotonic ns).
    static func read(_ child: ChildProcess, until deadline: UInt64, untilNewline: Bool = false) throws -> String {
        var collected: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let now = monotonicNanos()
            guard now < deadline else { throw BenchError("\(child.name): no answer in time") }
            var pollFD = pollfd(fd: child.stdoutFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pollFD, 1, Int32(min((deadline - now) / 1_000_000 + 1, 1000)))
            if ready < 0 && errno != EINTR { throw BenchError.sys("poll") }
            if ready <= 0 { continue }
            let n = Glibc.read(child.stdoutFD, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            collected += chunk[0..<n]
            if untilNewline && collected.contains(0x0A) { break }
        }
        return String(decoding: collected, as: UTF8.self)
    }

    /// Waits for the child to exit; its wait status, or nil after `timeout` seconds.
    static func wait(_ child: ChildProcess, timeout: Double) -> Int32? {
        let deadline = monotonicNanos() + UInt64(timeout * 1e9)
        var status: Int32 = 0
        while true {
            let rc = waitpid(child.pid, &status, WNOHANG)
            if rc == child.pid || (rc < 0 && errno == ECHILD) {
                ChildTable.remove(child.pid)
                return status
            }
            if monotonicNanos() >= deadline { return nil }
            usleep(2_000)
        }
    }

    static func isRunning(_ child: ChildProcess) -> Bool {
        var status: Int32 = 0
        return waitpid(child.pid, &status, WNOHANG) == 0
    }

    /// Sends `signal`, waits up to `grace` seconds, then SIGKILL.
    static func stop(_ child: ChildProcess, signal: Int32 = SIGTERM, grace: Double = 3) {
        kill(child.pid, signal)
        if wait(child, timeout: grace) == nil {
            kill(child.pid, SIGKILL)
            _ = wait(child, timeout: 5)
        }
        if child.stdoutFD >= 0 { close(child.stdoutFD) }
    }

    /// Exit status in words, for error messages.
    static func describe(status: Int32) -> String {
        let signal = status & 0x7F
        if signal == 0 { return "exit code \((status >> 8) & 0xFF)" }
        return "signal \(signal)"
    }
}

/// Figures from /proc for one process.
enum ProcStats {
    private static func contents(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// utime + stime of every thread, in seconds (clock-tick resolution).
    static func cpuSeconds(_ pid: pid_t) -> Double? {
        guard let stat = contents("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after "comm)": state is field 3, so utime (14) and stime (15) are at 11 and 12.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        return (utime + stime) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A `kB` figure from /proc/PID/status, such as VmRSS or VmHWM.
    static func statusKB(_ pid: pid_t, _ key: String) -> Int? {
        guard let status = contents("/proc/\(pid)/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(key + ":") {
            return Int(line.dropFirst(key.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }
}

/// `mediator-bench __exec PROGRAM ARGS...`: sets PR_SET_PDEATHSIG and
/// becomes PROGRAM, so that a program we do not own dies with the bench too.
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
