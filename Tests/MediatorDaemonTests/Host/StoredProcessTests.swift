import Logging
import MediatorEventLoop
import Synchronization
import Testing

@testable import MediatorDaemon

#if canImport(Glibc)
import Glibc
#endif

/// Component processes in systemd's fd store (docs/systemd.md, "Managed
/// components across a restart"): their names, and the watch of one the
/// daemon is not the parent of, as after `systemctl restart`. The store
/// itself needs systemd (the nspawn suite's `restart-keeps-everything`).
@Suite("Component processes kept in the fd store")
struct StoredProcessTests {
    @Test func namesParseBackByProcess() {
        #expect(StoredProcess.names(spawnID: 3, pid: 812) == ["process-3-812", "process-3-812-stdout", "process-3-812-stderr"])
        let (processes, strays) = StoredProcess.group([
            ("process-3-812", 10), ("process-3-812-stdout", 11), ("process-4-900-stderr", 12),
            ("process-3-813", 13), ("process-x-1", 14), ("process-3-812", 15), ("process-5-7-other", 16),
        ])
        #expect(processes[3] == StoredProcess(spawnID: 3, pid: 812, pidfd: 10, stdout: 11, stderr: nil))
        #expect(processes[4] == StoredProcess(spawnID: 4, pid: 900, pidfd: nil, stdout: nil, stderr: 12))
        // Another pid under the same spawn id, a bad name, a duplicate, an unknown stream.
        #expect(strays.map(\.fd) == [13, 14, 15, 16])
        #expect(StoredProcess.isProcessName("process-3-812") && !StoredProcess.isProcessName("connection-3"))
    }

    /// A process that is not this process's child: `sh` starts it in the
    /// background and exits, so it is reparented (as a restart's successor
    /// finds the components).
    static func orphan() -> Int32? {
        guard let shell = popen("/bin/sh -c 'sleep 30 >/dev/null 2>&1 & echo $!'", "r") else { return nil }
        defer { pclose(shell) }
        var line = [CChar](repeating: 0, count: 32)
        guard fgets(&line, 32, shell) != nil else { return nil }
        let text = String(cString: line).split(separator: "\n").first.map(String.init) ?? ""
        return Int32(text)
    }

    @Test func aNonChildsEndIsUnobserved() async throws {
        let pid = try #require(Self.orphan())
        let pidfd = AdoptedChild.open(pid)
        try #require(pidfd >= 0)
        let loop = try SDEventLoop()
        let thread = try loop.start()
        defer { _ = try? thread.stop() }
        let ended = Mutex<ProcessEnd?>(nil)
        let box = ChildBox()
        let watching = try await loop.submit {
            box.child = AdoptedChild(pid: pid, pidfd: pidfd, loop: loop) { end in ended.withLock { $0 = end } }
            return box.child != nil
        }
        #expect(watching)
        #expect(kill(pid, SIGTERM) == 0)
        for _ in 0..<200 where ended.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(10)) }
        // waitid says ECHILD: no exit status, only that it ended.
        #expect(ended.withLock { $0 } == .unobserved)
        try await loop.submit { box.child = nil }
    }
}

/// The watcher, touched only on the loop's thread.
private final class ChildBox: @unchecked Sendable {
    var child: AdoptedChild?
}
