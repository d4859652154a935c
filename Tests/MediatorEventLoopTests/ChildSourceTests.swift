import Glibc
import MediatorEventLoop
import Testing

@Suite("sd-event: child processes", .timeLimit(.minutes(1)))
struct ChildSourceTests {
    @Test func anExitedChildIsReportedWithItsStatusAndReaped() throws {
        let loop = try SDEventLoop()
        var blocked = sigset_t()
        var previous = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGCHLD)
        #expect(pthread_sigmask(SIG_BLOCK, &blocked, &previous) == 0)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }

        // The child waits for a byte, so the source exists before it exits.
        let pair = try SocketPair()
        let pid = try spawn(["/bin/sh", "-c", "read line <&3; exit 3"], passing: pair.b)
        var states: [ChildState] = []
        let source = try loop.addChild(pid) { _, state in states.append(state) }
        #expect(source.pid == pid)
        try loop.dispatchReady()
        #expect(states.isEmpty)

        SocketPair.write(pair.a, Array("go\n".utf8))
        #expect(try loop.run(until: { !states.isEmpty }))
        #expect(states == [.exited(status: 3)])
        // Reaped by sd-event: no such child any more.
        var status: Int32 = 0
        #expect(waitpid(pid, &status, WNOHANG) == -1 && errno == ECHILD)
        source.cancel()
        #expect(loop.census.live == 0)
    }

    @Test func aKilledChildIsReportedWithTheSignal() throws {
        let loop = try SDEventLoop()
        var blocked = sigset_t()
        var previous = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGCHLD)
        #expect(pthread_sigmask(SIG_BLOCK, &blocked, &previous) == 0)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }

        let pair = try SocketPair()
        let pid = try spawn(["/bin/sh", "-c", "read line <&3"], passing: pair.b)
        var states: [ChildState] = []
        let source = try loop.addChild(pid) { _, state in states.append(state) }
        kill(pid, SIGKILL)
        #expect(try loop.run(until: { !states.isEmpty }))
        #expect(states == [.killed(signal: SIGKILL)])
        source.cancel()
    }

    /// Starts ARGUMENTS with FD as the child's descriptor 3.
    private func spawn(_ arguments: [String], passing fd: Int32) throws -> pid_t {
        // The child's read must wait (the pair is non-blocking).
        guard fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0 else { throw SDEventError("fcntl", errno: errno) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fd, 3)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let failure = posix_spawn(&pid, arguments[0], &actions, nil, &argv, environ)
        guard failure == 0 else { throw SDEventError("posix_spawn", errno: failure) }
        return pid
    }
}
