/// A component process's descriptors in systemd's fd store (issue 28):
/// stored as it starts, so that the next daemon, after a `systemctl
/// restart` or a crash, still has a pidfd of it (no PID reuse can fool
/// it) and the read ends of its output pipes. Named after the spawn id and
/// the pid: `process-S-P` (the pidfd), `process-S-P-stdout`, `process-S-P-stderr`.
package struct StoredProcess: Equatable, Sendable {
    var spawnID: Int
    var pid: Int32
    var pidfd: Int32?
    var stdout: Int32?
    var stderr: Int32?

    static let prefix = "process-"

    static func pidfdName(spawnID: Int, pid: Int32) -> String { prefix + "\(spawnID)-\(pid)" }
    static func outputName(spawnID: Int, pid: Int32, stream: String) -> String { pidfdName(spawnID: spawnID, pid: pid) + "-" + stream }

    /// Every name one process is stored under.
    static func names(spawnID: Int, pid: Int32) -> [String] {
        [pidfdName(spawnID: spawnID, pid: pid), outputName(spawnID: spawnID, pid: pid, stream: "stdout"),
         outputName(spawnID: spawnID, pid: pid, stream: "stderr")]
    }

    /// Whether a stored name is one of a process's (the launcher keeps them apart from connections).
    package static func isProcessName(_ name: String) -> Bool { name.hasPrefix(prefix) }

    /// The stored descriptors of each process, by spawn id. Names that do
    /// not parse, and duplicates, come back in `strays` for the caller to close.
    static func group(_ stored: [(name: String, fd: Int32)]) -> (processes: [Int: StoredProcess], strays: [(name: String, fd: Int32)]) {
        var processes: [Int: StoredProcess] = [:]
        var strays: [(name: String, fd: Int32)] = []
        for (name, fd) in stored {
            let parts = name.dropFirst(prefix.count).split(separator: "-", omittingEmptySubsequences: false)
            guard name.hasPrefix(prefix), parts.count == 2 || parts.count == 3, let spawnID = Int(parts[0]),
                let pid = Int32(parts[1]), pid > 0
            else {
                strays.append((name, fd))
                continue
            }
            var process = processes[spawnID] ?? StoredProcess(spawnID: spawnID, pid: pid)
            guard process.pid == pid else {
                strays.append((name, fd))
                continue
            }
            let slot: WritableKeyPath<StoredProcess, Int32?>
            switch parts.count == 2 ? "pidfd" : parts[2] {
            case "pidfd": slot = \.pidfd
            case "stdout": slot = \.stdout
            case "stderr": slot = \.stderr
            default:
                strays.append((name, fd))
                continue
            }
            guard process[keyPath: slot] == nil else {
                strays.append((name, fd))
                continue
            }
            process[keyPath: slot] = fd
            processes[spawnID] = process
        }
        return (processes, strays)
    }

    /// Its descriptors, to close when nothing takes them.
    var descriptors: [Int32] { [pidfd, stdout, stderr].compactMap { $0 } }
}
