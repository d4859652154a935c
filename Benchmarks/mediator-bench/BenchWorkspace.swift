import ChildProcesses
import Foundation
import Glibc

/// What `run` and `flood` measure in: the mediatord binary they start and a
/// fresh directory for the sockets.
struct BenchWorkspace {
    let mediatord: String
    let directory: String

    /// Runs `body` in a new workspace and cleans up after it. SIGPIPE is
    /// ignored (a peer that hangs up is an error, not a signal); every child
    /// is killed on SIGINT/SIGTERM/SIGHUP and when `body` is done; the
    /// directory `/tmp/<prefix>.XXXXXX` is removed then too, or by the signal
    /// handler together with the `sockets` named in it. `openToOtherUsers`
    /// makes it 0755, so that clients under other uids reach the sockets.
    static func run<Result>(
        prefix: String, mediatord given: String?, sockets: [String], openToOtherUsers: Bool = false,
        _ body: (BenchWorkspace) throws -> Result
    ) throws -> Result {
        signal(SIGPIPE, SIG_IGN)
        ChildTable.installSignalHandlers()
        let mediatord = given ?? Children.nextToSelf("mediatord")
        guard access(mediatord, X_OK) == 0 else {
            throw BenchError("no executable mediatord at \(mediatord); build it or pass --mediatord PATH")
        }
        let directory = try makeTemporaryDirectory(prefix: prefix)
        if openToOtherUsers { chmod(directory, 0o755) }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        ChildTable.removeOnSignal(sockets.map { directory + "/" + $0 } + [directory])
        defer { ChildTable.killAll() }
        return try body(BenchWorkspace(mediatord: mediatord, directory: directory))
    }
}
