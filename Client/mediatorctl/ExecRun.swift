#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import NIOConcurrencyHelpers
import MediatorClient
import MediatorProtocol
import NIOConcurrencyHelpers

/// One run of a program for `serve` (or of journalctl for `status`): started with `posix_spawn`, its stdin
/// written and its stdout and stderr read to their end on threads of their
/// own (blocking I/O on the concurrency pool or dispatch's global queues
/// would starve them), and its exit status reaped with `waitpid`.
///
/// Not Foundation's `Process`, because the child must not inherit what the
/// thread that starts it has: the concurrency and NIO threads block most
/// signals (a blocked SIGTERM would make cancelling a call a no-op), and
/// NIO ignores SIGPIPE. Here the child gets an empty signal mask, default
/// dispositions, and a process group of its own, so that cancelling reaches
/// the children of a shell script too.
///
/// `@unchecked Sendable`: the only mutable members, `exitContinuation` and
/// `termination`, are read and written with `lock` held; the rest are constants.
final class ExecRun: @unchecked Sendable {
    enum Termination: Sendable, Equatable {
        case exited(Int32)
        case signaled(Int32)
    }

    struct Outcome: Sendable {
        var termination: Termination
        var stdout: [UInt8]
        var stderr: [UInt8]
    }

    struct SpawnError: Error, CustomStringConvertible {
        var errno: Int32
        var description: String { String(cString: strerror(errno)) }
    }

    private let program: String
    private let arguments: [String]
    private let environment: [String: String]
    private let input: [UInt8]

    private let lock = NIOLock()
    private var exitContinuation: CheckedContinuation<Termination, Never>?
    private var termination: Termination?

    /// Runs `program ACTION`.
    ///
    /// - Throws: `invalid_params` when `action` breaks the action name rules.
    ///   Callers check it first; checking again where argv is built keeps a
    ///   name like `-rf` or `../x; rm` from ever reaching a program however
    ///   the call got here.
    convenience init(program: URL, action: String, environment: [String: String], input: [UInt8]) throws(MediatorError) {
        self.init(path: program.path, arguments: [try Component.validatedActionName(action, member: "action")],
                  environment: environment, input: input)
    }

    /// Runs `path ARGUMENTS...` (`status` runs journalctl so).
    init(path: String, arguments: [String], environment: [String: String], input: [UInt8] = []) {
        self.program = path
        self.arguments = arguments
        self.environment = environment
        self.input = input
    }

    /// Held while pipes are made and a child is started: a child started
    /// meanwhile by another call would otherwise inherit them before they are
    /// marked close-on-exec, and hold that call's stdout open while it runs.
    private static let spawnLock = NIOLock()

    /// Throws ``SpawnError``, or `CancellationError` when the task is
    /// cancelled (the program's group is then stopped).
    func run() async throws -> Outcome {
        let child = try spawn()
        let pid = child.pid
        Children.shared.insert(pid)
        defer { Children.shared.remove(pid) }

        let input = input
        // Blocking reads and writes, each on a thread of Dispatch's own.
        DispatchQueue.global().async {
            // EPIPE when the program does not read its stdin: `serve`
            // catches SIGPIPE, so that is only an error here.
            input.withUnsafeBytes { buffer in _ = Self.writeAll(child.stdin, buffer) }
            close(child.stdin)
        }
        let reads = DispatchGroup()
        let collected = Collected()
        for (fd, isOutput) in [(child.stdout, true), (child.stderr, false)] {
            reads.enter()
            DispatchQueue.global().async {
                collected.set(Self.readAll(fd), output: isOutput)
                close(fd)
                reads.leave()
            }
        }
        DispatchQueue.global().async { [self] in
            let ended = Self.reap(pid)
            lock.lock()
            termination = ended
            let continuation = exitContinuation
            exitContinuation = nil
            lock.unlock()
            continuation?.resume(returning: ended)
        }

        let ended = await withTaskCancellationHandler {
            await waitForExit()
        } onCancel: {
            Self.stop(group: pid)
        }
        if Task.isCancelled {
            // Nothing will be answered; the readers finish on their own once
            // whatever the program left behind is gone too.
            throw CancellationError()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            reads.notify(queue: .global()) { continuation.resume() }
        }
        return Outcome(termination: ended, stdout: collected.stdout, stderr: collected.stderr)
    }

    // MARK: - Starting

    private struct Child: Sendable {
        var pid: pid_t
        var stdin: Int32
        var stdout: Int32
        var stderr: Int32
    }

    private func spawn() throws(SpawnError) -> Child {
        Self.spawnLock.lock()
        defer { Self.spawnLock.unlock() }

        var pipes: [[Int32]] = []
        for _ in 0..<3 {
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else {
                let error = errno
                for fd in pipes.joined() { close(fd) }
                throw SpawnError(errno: error)
            }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            pipes.append(fds)
        }
        // Ours: the write end of stdin, the read ends of stdout and stderr.
        let (childIn, ourIn) = (pipes[0][0], pipes[0][1])
        let (ourOut, childOut) = (pipes[1][0], pipes[1][1])
        let (ourErr, childErr) = (pipes[2][0], pipes[2][1])
        defer { for fd in [childIn, childOut, childErr] { close(fd) } }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, childIn, 0)
        posix_spawn_file_actions_adddup2(&actions, childOut, 1)
        posix_spawn_file_actions_adddup2(&actions, childErr, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal: Int32 in 1..<32 where signal != SIGKILL && signal != SIGSTOP { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }

        var pid: pid_t = 0
        let status = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        guard status == 0 else {
            for fd in [ourIn, ourOut, ourErr] { close(fd) }
            throw SpawnError(errno: status)
        }
        return Child(pid: pid, stdin: ourIn, stdout: ourOut, stderr: ourErr)
    }

    // MARK: - Blocking helpers (on their own threads)

    private static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < buffer.count {
            let count = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += count
        }
        return true
    }

    private static func readAll(_ fd: Int32) -> [UInt8] {
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if count > 0 {
                data.append(contentsOf: chunk[..<count])
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return data
            }
        }
    }

    private static func reap(_ pid: pid_t) -> Termination {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return .exited(-1) }
        }
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
    }

    // MARK: - Exit and cancellation

    private func waitForExit() async -> Termination {
        await withCheckedContinuation { continuation in
            lock.lock()
            if let termination {
                lock.unlock()
                continuation.resume(returning: termination)
            } else {
                exitContinuation = continuation
                lock.unlock()
            }
        }
    }

    /// SIGTERM to the process group, SIGKILL 2 s later if any of it is left.
    static func stop(group pid: pid_t) {
        guard pid > 0 else { return }
        kill(-pid, SIGTERM)
        DispatchQueue.global().asyncAfter(deadline: .now() + 2) {
            kill(-pid, SIGKILL)
        }
    }

    private final class Collected: Sendable {
        private let outputs = NIOLockedValueBox<(out: [UInt8], err: [UInt8])>(([], []))

        func set(_ bytes: [UInt8], output: Bool) {
            outputs.withLockedValue { if output { $0.out = bytes } else { $0.err = bytes } }
        }

        var stdout: [UInt8] { outputs.withLockedValue { $0.out } }
        var stderr: [UInt8] { outputs.withLockedValue { $0.err } }
    }
}

/// The process groups of the runs in progress, stopped when `serve` exits.
final class Children: Sendable {
    static let shared = Children()
    private let pids = NIOLockedValueBox<Set<pid_t>>([])

    func insert(_ pid: pid_t) { pids.withLockedValue { _ = $0.insert(pid) } }
    func remove(_ pid: pid_t) { pids.withLockedValue { _ = $0.remove(pid) } }

    func terminateAll() {
        for pid in pids.withLockedValue({ $0 }) { kill(-pid, SIGTERM) }
    }
}
