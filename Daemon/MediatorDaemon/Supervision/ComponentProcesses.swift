import Logging
import MediatorEventLoop

#if canImport(Glibc)
import Glibc
#endif

/// The component processes the daemon started, by spawn id: the readers
/// of their output pipes, and after a re-exec the watchers that stand in
/// for the spawner's await of each (issue 28: managed components survive
/// a re-exec). Confined to the loop's thread.
final class ComponentProcesses {
    /// One process, as a re-exec hands it on: its pipes' read ends stay open.
    struct HandOver: Equatable {
        var spawnID: Int
        var target: String
        var pid: Int32
        var stdout: Int32?
        var stderr: Int32?
    }

    private struct Entry {
        var target: String
        var pid: Int32?
        var stdout: ComponentOutputReader?
        var stderr: ComponentOutputReader?
        var adopted: AdoptedChild?
    }

    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    /// glibc's pipe2, not exported to Swift (_GNU_SOURCE): close-on-exec from
    /// the start, so a process spawned meanwhile by another thread cannot inherit it.
    private static let pipe2: Pipe2? = dlsym(nil, "pipe2").map { unsafeBitCast($0, to: Pipe2.self) }

    private let loop: SDEventLoop
    private let logger: Logger
    private var entries: [Int: Entry] = [:]

    init(loop: SDEventLoop, logger: Logger) {
        self.loop = loop
        self.logger = logger
    }

    /// Pipes for a process about to be spawned, read from now on; the
    /// write ends, to give the child as its stdout and stderr (the spawner
    /// closes them in this process). Nil when pipes cannot be made.
    func outputPipes(spawnID: Int, target: String) -> (stdout: Int32, stderr: Int32)? {
        guard let pipe2 = Self.pipe2 else { return nil }
        var out: [Int32] = [-1, -1]
        var err: [Int32] = [-1, -1]
        guard pipe2(&out, O_CLOEXEC) == 0 else { return nil }
        guard pipe2(&err, O_CLOEXEC) == 0 else {
            close(out[0])
            close(out[1])
            return nil
        }
        let stdout = try? ComponentOutputReader(fd: out[0], stream: "stdout", target: target, logger: logger, loop: loop)
        let stderr = try? ComponentOutputReader(fd: err[0], stream: "stderr", target: target, logger: logger, loop: loop)
        if stdout == nil { close(out[0]) }
        if stderr == nil { close(err[0]) }
        entries[spawnID] = Entry(target: target, stdout: stdout, stderr: stderr)
        return (out[1], err[1])
    }

    func started(spawnID: Int, pid: Int32) {
        entries[spawnID]?.pid = pid
        entries[spawnID]?.stdout?.pid = pid
        entries[spawnID]?.stderr?.pid = pid
    }

    /// The process ended (its end reported): its readers finish reading what is left on their own.
    func ended(spawnID: Int) {
        entries[spawnID] = nil
    }

    /// Whether a process was spawned whose pid is not known yet: a re-exec
    /// waits for it (the new image could not watch it).
    var isStartingAny: Bool { entries.values.contains { $0.pid == nil } }

    /// Every process, for a re-exec: the pipes' read ends to keep open.
    /// Nothing changes here, so that a failed exec carries on as before.
    func handOver() -> [HandOver] {
        entries.sorted { $0.key < $1.key }.compactMap { spawnID, entry in
            entry.pid.map { pid in
                HandOver(
                    spawnID: spawnID, target: entry.target, pid: pid, stdout: entry.stdout?.handOver(),
                    stderr: entry.stderr?.handOver())
            }
        }
    }

    /// Carries on from a predecessor's ``handOver()``: reads the pipes and
    /// watches each process; `ended` gets each process's end, on the loop
    /// (`goneAs` for one that is gone already).
    func adopt(_ processes: [HandOver], goneAs: ProcessEnd = .signaled(0), ended: @escaping (Int, ProcessEnd) -> Void) {
        for process in processes {
            func reader(_ fd: Int32?, _ stream: String) -> ComponentOutputReader? {
                guard let fd else { return nil }
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                let reader = try? ComponentOutputReader(fd: fd, stream: stream, target: process.target, logger: logger, loop: loop)
                if reader == nil { close(fd) }
                reader?.pid = process.pid
                return reader
            }
            let spawnID = process.spawnID
            let child = AdoptedChild(pid: process.pid, loop: loop) { [weak self] end in
                self?.entries[spawnID] = nil
                ended(spawnID, end)
            }
            guard let child else {
                // Reaped before the exec, its end not reported: gone all the same.
                logger.warning("a component process handed over is gone", metadata: ["target": "\(process.target)", "pid": "\(process.pid)"])
                if let fd = process.stdout { close(fd) }
                if let fd = process.stderr { close(fd) }
                ended(spawnID, goneAs)
                continue
            }
            entries[spawnID] = Entry(
                target: process.target, pid: process.pid, stdout: reader(process.stdout, "stdout"),
                stderr: reader(process.stderr, "stderr"), adopted: child)
        }
    }
}
