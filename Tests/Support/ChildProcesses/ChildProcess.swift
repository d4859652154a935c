import Glibc

/// One started child.
public struct ChildProcess {
    /// Where a child's stdout (and stderr) go.
    public enum Output {
        /// This process's stdout and stderr.
        case inherit
        /// stdout into a pipe that `Children.read` reads; stderr inherited.
        case pipe
        /// stdout and stderr appended to the file at this path.
        case appendTo(String)
    }

    public let pid: pid_t
    /// For error messages.
    public let name: String
    /// Read end of the pipe on the child's stdout (`Output.pipe` only).
    public let stdoutFD: Int32?

    public init(pid: pid_t, name: String, stdoutFD: Int32? = nil) {
        self.pid = pid
        self.name = name
        self.stdoutFD = stdoutFD
    }
}
