import MediatorEventLoop

#if canImport(Glibc)
import Glibc
#endif

/// A component process that a predecessor started and nobody awaits any
/// more: watched through a pidfd on the loop. After a re-exec (same pid)
/// it is still this process's child, reaped with waitid once it ends,
/// with its exit status. After a `systemctl restart` (another pid, the
/// pidfd from the fd store) it is not: waitid says ECHILD, its new parent
/// reaps it, and its end is ``ProcessEnd/unobserved``. Confined to the loop's thread.
final class AdoptedChild {
    let pid: Int32
    private let pidfd: Int32
    private var source: IOSource?

    private typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
    /// glibc's pidfd_open (2.36 and later); not exported to Swift.
    private static let pidfdOpen: PidfdOpen? = dlsym(nil, "pidfd_open").map { unsafeBitCast($0, to: PidfdOpen.self) }

    private typealias PidfdSendSignal = @convention(c) (Int32, Int32, UnsafeMutableRawPointer?, UInt32) -> Int32
    /// glibc's pidfd_send_signal (2.36 and later); not exported to Swift.
    private static let pidfdSendSignal: PidfdSendSignal? = dlsym(nil, "pidfd_send_signal").map {
        unsafeBitCast($0, to: PidfdSendSignal.self)
    }

    /// `pidfd`: one kept for it (taken over, closed here), else one is
    /// opened. Nil when the child is gone already (reaped before the exec)
    /// or a pidfd cannot be had; then `ended` is not called.
    init?(pid: Int32, pidfd given: Int32? = nil, loop: SDEventLoop, ended: @escaping (ProcessEnd) -> Void) {
        let pidfd = given ?? Self.open(pid)
        guard pidfd >= 0 else { return nil }
        self.pid = pid
        self.pidfd = pidfd
        _ = fcntl(pidfd, F_SETFD, FD_CLOEXEC)
        do {
            source = try loop.addIO(fd: pidfd, events: .readable) { [unowned self] _, _ in
                guard let end = reap() else { return }
                source?.cancel()
                source = nil
                ended(end)
            }
        } catch {
            close(pidfd)
            return nil
        }
    }

    /// A new pidfd for `pid` (close-on-exec); -1 when it is gone or none can be had.
    static func open(_ pid: Int32) -> Int32 {
        guard let pidfdOpen else { return -1 }
        return pidfdOpen(pid, 0)
    }

    /// Signals the process itself through its pidfd (no PID reuse can misdirect it).
    func signal(_ signal: Int32) {
        _ = Self.pidfdSendSignal?(pidfd, signal, nil, 0)
    }

    deinit {
        source?.cancel()
        close(pidfd)
    }

    /// How it ended, once it has (reaping it); nil while it runs.
    private func reap() -> ProcessEnd? {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG) == 0 else {
            // ECHILD: not this process's child (or reaped elsewhere): it
            // ended (the pidfd said so), how is not known.
            return errno == ECHILD ? .unobserved : nil
        }
        guard info._sifields._sigchld.si_pid == pid else { return nil }
        let status = info._sifields._sigchld.si_status
        return info.si_code == Int32(CLD_EXITED) ? .exited(status) : .signaled(status)
    }
}
