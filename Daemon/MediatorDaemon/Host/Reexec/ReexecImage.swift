#if canImport(Glibc)
import Glibc
#endif

/// The program a re-exec runs: the path the daemon was started by (made
/// absolute at start), with its original arguments. A path, not
/// `/proc/self/exe`: that is the running inode, which an upgrade replaced
/// on disk; the path names the binary installed now.
package struct ReexecImage: Sendable, Equatable {
    package var executablePath: String
    /// `argv`, the program's name included.
    package var arguments: [String]

    package init(executablePath: String, arguments: [String]) {
        self.executablePath = executablePath
        self.arguments = arguments
    }

    /// The image of this process from its `argv` and `PATH`, resolved now
    /// (at start: a later `chdir` or `PATH` change must not change it). Nil
    /// when `argv[0]` names no executable file.
    package static func resolve(arguments: [String], path: String?) -> ReexecImage? {
        guard let name = arguments.first, !name.isEmpty else { return nil }
        if name.contains("/") {
            guard let absolute = absolute(name), access(absolute, X_OK) == 0 else { return nil }
            return ReexecImage(executablePath: absolute, arguments: arguments)
        }
        // A bare name was found through PATH, as execvp finds it.
        for directory in (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            let candidate = String(directory) + "/" + name
            if access(candidate, X_OK) == 0, let absolute = absolute(candidate) {
                return ReexecImage(executablePath: absolute, arguments: arguments)
            }
        }
        return nil
    }

    private static func absolute(_ path: String) -> String? {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/" + path
    }

    /// Whether the file at ``executablePath`` is another one than the
    /// binary running (an upgrade installed a new one): their device and
    /// inode differ. False when either cannot be read.
    package var isReplacedOnDisk: Bool {
        var onDisk = stat()
        var running = stat()
        guard stat(executablePath, &onDisk) == 0, stat("/proc/self/exe", &running) == 0 else { return false }
        return onDisk.st_dev != running.st_dev || onDisk.st_ino != running.st_ino
    }

    /// Replaces this process's image; returns only when `execve` failed,
    /// with its errno. Signals are blocked and their handlers reset around
    /// it so that the new image starts as a fresh process would (the mask
    /// and ignored signals survive an exec); the new image unblocks them
    /// (``ReexecImage/unblockSignalsAfterReexec()``). On failure both are
    /// restored.
    func exec(environment: [String]) -> Int32 {
        var all = sigset_t()
        var before = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &before)
        var saved: [(Int32, sigaction)] = []
        for signal in 1..<Int32(32) where signal != SIGKILL && signal != SIGSTOP {
            var old = sigaction()
            var fresh = sigaction()
            fresh.__sigaction_handler.sa_handler = SIG_DFL
            if sigaction(signal, &fresh, &old) == 0 { saved.append((signal, old)) }
        }
        // Copies in C's form; the arrays pass as the pointers execve takes.
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        execve(executablePath, argv, envp)
        let code = errno
        for copy in argv + envp { free(copy) }
        for (signal, var old) in saved { sigaction(signal, &old, nil) }
        pthread_sigmask(SIG_SETMASK, &before, nil)
        return code
    }

    /// After a re-exec, in the new image, before anything waits for signals.
    /// SIGHUP and SIGUSR2 are ignored until their handlers are in place
    /// (a reload or re-exec asked in that moment is lost, rather than
    /// ending the daemon, their default action).
    package static func unblockSignalsAfterReexec() {
        signal(SIGHUP, SIG_IGN)
        signal(SIGUSR2, SIG_IGN)
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
    }
}

/// Close-on-exec on and off, for the descriptors a re-exec keeps.
enum CloseOnExec {
    /// Sets or clears FD_CLOEXEC on each; the first failure's errno.
    @discardableResult
    static func set(_ enabled: Bool, on descriptors: [Int32]) -> Int32? {
        var failure: Int32?
        for fd in descriptors {
            let flags = fcntl(fd, F_GETFD)
            let wanted = enabled ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC
            if flags < 0 || fcntl(fd, F_SETFD, wanted) != 0 { failure = failure ?? errno }
        }
        return failure
    }
}
