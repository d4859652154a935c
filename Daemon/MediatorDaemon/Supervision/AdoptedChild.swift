import MediatorEventLoop

#if canImport(Glibc)
import Glibc
#endif

/// A component process that a predecessor image started (same pid, so
/// still this process's child) and nobody awaits any more after the
/// re-exec: watched through a pidfd on the loop, reaped with waitid once
/// it ends. Confined to the loop's thread.
final class AdoptedChild {
    let pid: Int32
    private let pidfd: Int32
    private var source: IOSource?

    private typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
    /// glibc's pidfd_open (2.36 and later); not exported to Swift.
    private static let pidfdOpen: PidfdOpen? = dlsym(nil, "pidfd_open").map { unsafeBitCast($0, to: PidfdOpen.self) }

    /// Nil when the child is gone already (reaped before the exec) or a
    /// pidfd cannot be had; then `ended` is not called.
    init?(pid: Int32, loop: SDEventLoop, ended: @escaping (ProcessEnd) -> Void) {
        guard let pidfdOpen = Self.pidfdOpen else { return nil }
        let pidfd = pidfdOpen(pid, 0)
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

    deinit {
        source?.cancel()
        close(pidfd)
    }

    /// How it ended, once it has (reaping it); nil while it runs.
    private func reap() -> ProcessEnd? {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG) == 0 else {
            // ECHILD: reaped elsewhere; nothing more will be known.
            return errno == ECHILD ? .signaled(0) : nil
        }
        guard info._sifields._sigchld.si_pid == pid else { return nil }
        let status = info._sifields._sigchld.si_status
        return info.si_code == Int32(CLD_EXITED) ? .exited(status) : .signaled(status)
    }
}
