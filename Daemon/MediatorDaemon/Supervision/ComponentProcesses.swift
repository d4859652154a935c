import Logging
import MediatorEventLoop

#if canImport(Glibc)
import Glibc
#endif

/// The component processes the daemon started, by spawn id: the readers
/// of their output pipes, and after a re-exec or a restart the watchers
/// that stand in for the spawner's await of each (issue 28: managed
/// components survive both). Under systemd with the fd store each is kept
/// there too as it starts (``StoredProcess``). Confined to the loop's thread.
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
        /// Its pidfd and pipes are in the fd store (a restart can hand it over).
        var inStore = false
    }

    /// After a crash, the stored processes that may still claim their
    /// components, by spawn id (BrokerHost+StoredAdoption.swift): not
    /// watched yet, their descriptors kept here until then.
    var claimable: [Int: StoredProcess] = [:]

    /// Left over from a predecessor whose state is lost (a crash, a
    /// hand-over that could not be read) and claimed by no component
    /// (BrokerHost+StoredAdoption.swift): ended, not supervised.
    private var leftOvers: [Int32: Entry] = [:]
    private var leftOverTimer: TimerSource?

    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    /// glibc's pipe2, not exported to Swift (_GNU_SOURCE): close-on-exec from
    /// the start, so a process spawned meanwhile by another thread cannot inherit it.
    private static let pipe2: Pipe2? = dlsym(nil, "pipe2").map { unsafeBitCast($0, to: Pipe2.self) }

    private let loop: SDEventLoop
    private let logger: Logger
    private var entries: [Int: Entry] = [:]
    /// The fd store (under systemd with `--fd-store`): each process is kept there as it starts.
    var store: ConnectionStore?

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
        guard var entry = entries[spawnID] else { return }
        entry.pid = pid
        entry.stdout?.pid = pid
        entry.stderr?.pid = pid
        entry.inStore = keepInStore(spawnID: spawnID, entry)
        entries[spawnID] = entry
    }

    /// Copies of its pidfd and of its pipes' read ends go to the fd store
    /// (systemd keeps its own; these close again), so that a successor can
    /// watch it and read on even after a crash.
    @discardableResult
    private func keepInStore(spawnID: Int, _ entry: Entry) -> Bool {
        guard let store, let pid = entry.pid else { return false }
        let pidfd = AdoptedChild.open(pid)
        // Gone already (reaped before this ran): its end is on its way.
        guard pidfd >= 0 else { return false }
        defer { close(pidfd) }
        var kept = store.storeReporting(pidfd, StoredProcess.pidfdName(spawnID: spawnID, pid: pid))
        for (reader, stream) in [(entry.stdout, "stdout"), (entry.stderr, "stderr")] {
            guard let fd = reader?.descriptor else { continue }
            kept = store.storeReporting(fd, StoredProcess.outputName(spawnID: spawnID, pid: pid, stream: stream)) && kept
        }
        if !kept {
            logger.warning(
                "a component process is not in the fd store: a restart cannot hand it over",
                metadata: ["target": "\(entry.target)", "pid": "\(pid)"])
        }
        return kept
    }

    /// Before a restart's hand-over: each process not in the fd store yet
    /// is stored again; one that still is not gets SIGKILL, since the next
    /// daemon could neither watch nor end it (and `systemctl stop` would
    /// then leave it running). Its end reaches the successor as one during
    /// the restart. The number of processes killed.
    func storeForHandOver() -> Int {
        var killed = 0
        for (spawnID, entry) in entries where !entry.inStore {
            guard let pid = entry.pid else { continue }
            if keepInStore(spawnID: spawnID, entry) {
                entries[spawnID]?.inStore = true
                continue
            }
            logger.error(
                "restart: a component process cannot be put in the fd store; SIGKILL, as the next daemon could not supervise it",
                metadata: ["target": "\(entry.target)", "pid": "\(pid)"])
            Self.signal(pid, SIGKILL, child: entry.adopted)
            killed += 1
        }
        return killed
    }

    /// Out of the fd store: systemd's copies would keep the pipes open.
    private func dropFromStore(spawnID: Int, pid: Int32?) {
        guard let store, let pid else { return }
        for name in StoredProcess.names(spawnID: spawnID, pid: pid) { store.remove(name) }
    }

    /// The process ended (its end reported): its readers finish reading what is left on their own.
    func ended(spawnID: Int) {
        dropFromStore(spawnID: spawnID, pid: entries[spawnID]?.pid)
        entries[spawnID] = nil
    }

    /// No process runs (left-overs included).
    var isEmpty: Bool { entries.isEmpty && leftOvers.isEmpty }

    /// Signals every process that reported its pid, with its process group
    /// (the spawner made one), left-overs included: for the daemon's stop.
    func signalAll(_ signal: Int32) {
        for entry in entries.values {
            guard let pid = entry.pid, pid > 0 else { continue }
            Self.signal(pid, signal, child: entry.adopted)
        }
        for (pid, entry) in leftOvers { Self.signal(pid, signal, child: entry.adopted) }
    }

    /// The group when there is one (a shell's children too), the process itself through its pidfd when known.
    private static func signal(_ pid: Int32, _ signal: Int32, child: AdoptedChild?) {
        if kill(-pid, signal) != 0 {
            if let child { child.signal(signal) } else { kill(pid, signal) }
        }
    }

    /// Whether a process was spawned whose pid is not known yet, or a
    /// stored one may still claim its component: a re-exec (or a
    /// restart's hand-over) waits for it (the new image could not watch
    /// it; the adoption settles within seconds).
    var isStartingAny: Bool { !claimable.isEmpty || entries.values.contains { $0.pid == nil } }

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
    /// (`goneAs` for one that is gone already). `stored`: after a restart,
    /// the fd store's descriptors of each (a pidfd, the pipes), taken out
    /// of `stored` as they are adopted (they stay in the store, for a crash); a process without a pidfd there is gone.
    func adopt(
        _ processes: [HandOver], stored: inout [Int: StoredProcess]?, goneAs: ProcessEnd = .signaled(0),
        ended: @escaping (Int, ProcessEnd) -> Void
    ) {
        for var process in processes {
            var pidfd: Int32?
            if stored != nil {
                let kept = stored?.removeValue(forKey: process.spawnID)
                if let kept, kept.pid == process.pid {
                    (pidfd, process.stdout, process.stderr) = (kept.pidfd, kept.stdout, kept.stderr)
                } else {
                    for fd in kept?.descriptors ?? [] { close(fd) }
                    (process.stdout, process.stderr) = (nil, nil)
                }
                // systemd dropped the pidfd when the process was reaped: it ended during the restart.
                if pidfd == nil {
                    logger.notice(
                        "a component process ended during the restart", metadata: ["target": "\(process.target)", "pid": "\(process.pid)"])
                    for fd in [process.stdout, process.stderr].compactMap({ $0 }) { close(fd) }
                    dropFromStore(spawnID: process.spawnID, pid: process.pid)
                    ended(process.spawnID, goneAs)
                    continue
                }
            }
            func reader(_ fd: Int32?, _ stream: String) -> ComponentOutputReader? {
                guard let fd else { return nil }
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                let reader = try? ComponentOutputReader(fd: fd, stream: stream, target: process.target, logger: logger, loop: loop)
                if reader == nil { close(fd) }
                reader?.pid = process.pid
                return reader
            }
            let spawnID = process.spawnID
            let pid = process.pid
            let child = AdoptedChild(pid: pid, pidfd: pidfd, loop: loop) { [weak self] end in
                self?.dropFromStore(spawnID: spawnID, pid: pid)
                self?.entries[spawnID] = nil
                ended(spawnID, end)
            }
            guard let child else {
                // Reaped before the exec, its end not reported: gone all the same.
                logger.warning("a component process handed over is gone", metadata: ["target": "\(process.target)", "pid": "\(process.pid)"])
                if let fd = process.stdout { close(fd) }
                if let fd = process.stderr { close(fd) }
                dropFromStore(spawnID: spawnID, pid: pid)
                ended(spawnID, goneAs)
                continue
            }
            // From the store after a restart; after a re-exec, stored by the predecessor image when it had a store.
            entries[spawnID] = Entry(
                target: process.target, pid: process.pid, stdout: reader(process.stdout, "stdout"),
                stderr: reader(process.stderr, "stderr"), adopted: child, inStore: store != nil)
        }
    }

    /// Processes a predecessor kept in the fd store whose state is lost
    /// (it crashed, or its hand-over could not be read) and that did not
    /// claim a component by registering again: nothing could supervise
    /// them as the broker would (it knows none of them), and
    /// `systemctl stop` must find nothing left, so they are ended as the
    /// control-group kill did before KillMode=process: SIGTERM, their
    /// output read meanwhile, SIGKILL after `grace`. Each stays in the
    /// store until it ended, so that a crash meanwhile does not lose it.
    func endLeftOvers(_ stored: [StoredProcess], grace: Duration) {
        for process in stored {
            func reader(_ fd: Int32?, _ stream: String) -> ComponentOutputReader? {
                guard let fd else { return nil }
                let reader = try? ComponentOutputReader(fd: fd, stream: stream, target: "(left over)", logger: logger, loop: loop)
                if reader == nil { close(fd) }
                reader?.pid = process.pid
                return reader
            }
            let pid = process.pid
            let child = process.pidfd.flatMap { pidfd in
                AdoptedChild(pid: pid, pidfd: pidfd, loop: loop) { [weak self] _ in
                    self?.logger.info("a left-over component process ended", metadata: ["pid": "\(pid)"])
                    self?.dropFromStore(spawnID: process.spawnID, pid: pid)
                    self?.leftOvers[pid] = nil
                }
            }
            guard let child else {
                // No pidfd: gone already (systemd dropped it when it was reaped).
                dropFromStore(spawnID: process.spawnID, pid: pid)
                for fd in [process.stdout, process.stderr].compactMap({ $0 }) { close(fd) }
                continue
            }
            leftOvers[pid] = Entry(
                target: "(left over)", pid: pid, stdout: reader(process.stdout, "stdout"), stderr: reader(process.stderr, "stderr"),
                adopted: child)
            Self.signal(pid, SIGTERM, child: child)
        }
        guard !leftOvers.isEmpty else { return }
        logger.notice(
            "ending component processes a predecessor left (its state is lost)",
            metadata: ["pids": "\(leftOvers.keys.sorted())", "grace_s": "\(grace.components.seconds)"])
        leftOverTimer = try? loop.addTimer(after: grace, accuracy: .milliseconds(10)) { [weak self] _, _ in
            guard let self else { return }
            leftOverTimer = nil
            for (pid, entry) in leftOvers { Self.signal(pid, SIGKILL, child: entry.adopted) }
        }
    }
}
