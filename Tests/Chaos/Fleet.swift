import ChildProcesses
import Foundation
import Glibc
import MediatorProtocol

/// A component process the run starts, kills and starts again itself.
final class OwnedProcess {
    let target: String
    let label: String
    let argv: [String]
    var child: ChildProcess?
    var pid: pid_t? { child?.pid }
    /// When to start it again (monotonic ns), once it is down.
    var restartAt: UInt64?
    /// Set when the run signalled it, so that its end is expected.
    var killedByUs = false

    init(target: String, label: String, argv: [String]) {
        self.target = target
        self.label = label
        self.argv = argv
    }
}

/// The components of the run and the chaos done to them: which processes
/// exist, killing and restarting them, and what the daemon reports about
/// the ones it starts from manifests.
final class Fleet {
    struct Counters {
        var ownedSIGKILL = 0
        var ownedSIGTERM = 0
        var ownedRestarts = 0
        /// Owned processes that ended without being signalled by the run.
        var ownedUnexpectedExits = 0
        var daemonStartedSIGKILL = 0
        var daemonStartedSIGTERM = 0
        /// Chaos ticks that found no process of a manifest target to kill.
        var daemonStartedNoneRunning = 0
        var abandonedConnections = 0
        /// Calls left in flight on the abandoned connections.
        var abandonedCalls = 0
        /// `ChaosOnDemand` processes SIGKILLed so that a held-call probe finds it being started.
        var probeKills = 0
        /// Held-call probes skipped: the daemon still counted it running after the bound.
        var probesSkipped = 0
        /// Re-execs of the daemon in place (`mediator/reexec`).
        var reexecs = 0
    }

    /// Percent of the strikes that re-execute the daemon instead (`--reexec-percent`).
    var reexecPercent = 0

    let socketPath: String
    let logPath: String
    let owned: [OwnedProcess]
    /// Instances each owned target has when everything runs.
    let ownedInstances: [String: Int]
    let managedTargets = [ChaosTargets.onDemand, ChaosTargets.demandPool]
    private(set) var counters = Counters()
    /// Every pid seen serving a manifest target: more than one per target
    /// means the daemon started it again after a kill.
    private(set) var managedPIDsSeen: [String: Set<Int32>] = [:]
    private let control: LineSocket
    private var nextControlID: Int64 = 1
    private var abandoned: [(socket: LineSocket, closeAt: UInt64)] = []
    private let violations: Violations

    init(socketPath: String, logPath: String, chaosBinary: String, python: String, notesScript: String,
         fdsScript: String, violations: Violations) throws {
        self.socketPath = socketPath
        self.logPath = logPath
        self.violations = violations
        var owned: [OwnedProcess] = []
        let swiftComponent = [chaosBinary, "component", "--socket", socketPath, "--die-with-parent"]
        owned.append(OwnedProcess(target: ChaosTargets.swift, label: "\(ChaosTargets.swift)#1",
                                  argv: swiftComponent + ["--target", ChaosTargets.swift]))
        for n in 1...2 {
            owned.append(OwnedProcess(target: ChaosTargets.swiftPool, label: "\(ChaosTargets.swiftPool)#\(n)",
                                      argv: swiftComponent + ["--target", ChaosTargets.swiftPool, "--pool"]))
        }
        for n in 1...3 {
            // Through the trampoline, so that python dies with the run.
            owned.append(OwnedProcess(
                target: ChaosTargets.notesPool, label: "\(ChaosTargets.notesPool)#\(n)",
                argv: [chaosBinary, ExecTrampoline.verb, python, "-u", notesScript, "--socket", socketPath,
                       "--target", ChaosTargets.notesPool, "--mode", "pool"]))
        }
        for n in 1...2 {
            owned.append(OwnedProcess(
                target: ChaosTargets.fds, label: "\(ChaosTargets.fds)#\(n)",
                argv: [chaosBinary, ExecTrampoline.verb, python, "-u", fdsScript, "--socket", socketPath,
                       "--target", ChaosTargets.fds]))
        }
        self.owned = owned
        ownedInstances = Dictionary(owned.map { ($0.target, 1) }, uniquingKeysWith: +)
        control = try LineSocket.connect(path: socketPath)
    }

    /// The manifests for the daemon's `--components` folder.
    static func writeManifests(into folder: String, chaosBinary: String) throws {
        let actions: JSONValue = .array(ChaosComponent.actions.map { .string($0) })
        let onDemand: JSONValue = [
            "target": .string(ChaosTargets.onDemand), "description": "chaos: started on demand, not restarted",
            "actions": actions, "exec": [.string(chaosBinary), "component"],
            "restart": "no",
            // Kills count as failures in a row; the run must never reach `failed`.
            "restart_limit": 1_000_000, "start_timeout_s": 10,
        ]
        let demandPool: JSONValue = [
            "target": .string(ChaosTargets.demandPool), "description": "chaos: a pool the daemon restarts",
            "actions": actions, "exec": [.string(chaosBinary), "component", "--pool"],
            "mode": "pool", "instances": 2, "restart": "on-failure", "restart_backoff_ms": 50,
            "restart_limit": 1_000_000, "start_timeout_s": 10,
        ]
        for (name, manifest) in [(ChaosTargets.onDemand, onDemand), (ChaosTargets.demandPool, demandPool)] {
            let path = "\(folder)/\(name).json"
            guard FileManager.default.createFile(atPath: path, contents: Data(manifest.encoded)) else {
                throw ChaosFailure("cannot write \(path)")
            }
        }
    }

    // MARK: - Control calls

    func controlResult(_ action: String, _ params: JSONValue = .object([:]), seconds: Double = 5) throws -> JSONValue {
        defer { nextControlID += 1 }
        return try control.result("mediator", action, params: params, id: nextControlID, seconds: seconds)
    }

    /// Instances registered per target, from `mediator/list`.
    func registeredInstances() throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for entry in try controlResult("list")["targets"]?.arrayValue ?? [] {
            guard let name = entry["target"]?.stringValue else { continue }
            counts[name] = entry["instances"]?.arrayValue?.count ?? 0
        }
        return counts
    }

    /// The pids the daemon reports for a manifest target (`mediator/status`).
    func managedPIDs(_ target: String) throws -> [Int32] {
        let status = try controlResult("status", ["target": .string(target)])
        let pids = (status["pids"]?.arrayValue ?? []).compactMap { $0.intValue.map { Int32(truncatingIfNeeded: $0) } }
        managedPIDsSeen[target, default: []].formUnion(pids)
        return pids
    }

    /// How many descriptors each running owned process of `target` has open.
    func descriptorCounts(of target: String) -> [Int32: Int] {
        var counts: [Int32: Int] = [:]
        for process in owned where process.target == target {
            if let pid = process.pid, let open = ProcStats.openDescriptors(pid) { counts[pid] = open.count }
        }
        return counts
    }

    func managedState(_ target: String) throws -> JSONValue {
        try controlResult("status", ["target": .string(target)])
    }

    // MARK: - Owned processes

    func start(_ process: OwnedProcess) {
        do {
            process.child = try Children.spawn(process.argv, name: process.label, output: .appendTo(logPath))
            process.killedByUs = false
            process.restartAt = nil
        } catch {
            violations.add("could not start a component", "\(process.label): \(error)")
            process.restartAt = monotonicNanos() + 500_000_000
        }
    }

    func startAll() {
        for process in owned where process.pid == nil { start(process) }
    }

    /// Reaps owned processes that ended; one that ended without our signal
    /// (it could not register, say) is started again shortly.
    func reap(now: UInt64) {
        for process in owned {
            guard let child = process.child, let status = Children.reap(child) else { continue }
            process.child = nil
            if !process.killedByUs {
                counters.ownedUnexpectedExits += 1
                note("mediator-chaos: \(process.label) (pid \(child.pid)) ended by itself (\(Children.describe(status: status))); starting it again")
                process.restartAt = now + 200_000_000
            }
        }
    }

    /// Starts the owned processes whose restart is due (all of them when `now` is nil).
    func restartDue(now: UInt64?) {
        for process in owned where process.pid == nil {
            guard let at = process.restartAt, now.map({ at <= $0 }) ?? true else { continue }
            start(process)
            counters.ownedRestarts += 1
        }
    }

    // MARK: - Chaos

    /// One random act of chaos.
    func strike(using rng: inout SeededGenerator, now: UInt64) {
        // Drawn only when asked for, so that the seeds of runs without re-execs replay as before.
        if reexecPercent > 0, Int.random(in: 0..<100, using: &rng) < reexecPercent {
            reexecDaemon()
            return
        }
        let roll = Int.random(in: 0..<100, using: &rng)
        if roll < 45 {
            killOwned(using: &rng, now: now)
        } else if roll < 85 {
            killDaemonStarted(using: &rng)
        } else {
            abandonConnection(using: &rng, now: now)
        }
    }

    /// The daemon hands everything to a new image of itself: every call in
    /// flight must still get exactly one answer, no connection may close.
    func reexecDaemon() {
        do {
            let answer = try controlResult("reexec", seconds: 15)
            guard answer["reexecs"]?.intValue != nil else {
                violations.add("a re-exec fell back or failed", "\(answer.jsonText)")
                return
            }
            counters.reexecs += 1
        } catch {
            violations.add("daemon did not re-execute", "\(error)")
        }
    }

    private func killOwned(using rng: inout SeededGenerator, now: UInt64) {
        let running = owned.filter { $0.pid != nil }
        guard let victim = running.randomElement(using: &rng), let pid = victim.pid else { return }
        let graceful = Int.random(in: 0..<10, using: &rng) < 3
        victim.killedByUs = true
        kill(pid, graceful ? SIGTERM : SIGKILL)
        if graceful { counters.ownedSIGTERM += 1 } else { counters.ownedSIGKILL += 1 }
        // It is started again once reaped and this delay has passed.
        victim.restartAt = now + UInt64.random(in: 0...800_000_000, using: &rng)
    }

    private func killDaemonStarted(using rng: inout SeededGenerator) {
        guard let target = managedTargets.randomElement(using: &rng) else { return }
        let pids: [Int32]
        do {
            pids = try managedPIDs(target)
        } catch {
            violations.add("daemon did not answer a control call", "status \(target): \(error)")
            return
        }
        guard let pid = pids.randomElement(using: &rng), pid > 0 else {
            counters.daemonStartedNoneRunning += 1
            return
        }
        if Int.random(in: 0..<10, using: &rng) < 3 {
            kill(pid, SIGTERM)
            counters.daemonStartedSIGTERM += 1
        } else {
            kill(pid, SIGKILL)
            counters.daemonStartedSIGKILL += 1
        }
    }

    /// A caller that sends slow calls and hangs up with them in flight: the
    /// daemon must cancel them toward the components and forget them, and
    /// close the descriptors of the two calls that carry one (held by the
    /// component, or in partials that find the caller gone).
    private func abandonConnection(using rng: inout SeededGenerator, now: UInt64) {
        do {
            let socket = try LineSocket.connect(path: socketPath)
            // Not waited for: the daemon reads a connection's lines in order.
            try socket.send(["id": 0, "target": "mediator", "action": "hello", "params": ["protocol": 1, "fds": true]])
            let withDescriptors: [JSONValue] = [
                ["id": 5, "target": .string(ChaosTargets.fds), "action": "sleep", "params": ["ms": 400, "f": ["$fd": 0]],
                 "timeout_ms": 2000, "fds": 1],
                ["id": 6, "target": .string(ChaosTargets.fds), "action": "stream",
                 "params": ["count": 5, "interval_ms": 50, "f": ["$fd": 0]], "more": true, "timeout_ms": 2000, "fds": 1],
            ]
            for call in withDescriptors {
                try socket.send(call, descriptors: [try TagMemfd.holding("abandoned")])
            }
            let calls: [JSONValue] = [
                ["id": 1, "target": .string(ChaosTargets.swift), "action": "slow", "params": ["ms": 500], "timeout_ms": 2000],
                ["id": 2, "target": .string(ChaosTargets.onDemand), "action": "stream",
                 "params": ["count": 5, "interval_ms": 50], "more": true, "timeout_ms": 2000],
                ["id": 3, "target": .string(ChaosTargets.notesPool), "action": "sleep", "params": ["ms": 400], "timeout_ms": 2000],
                ["id": 4, "target": .string(ChaosTargets.demandPool), "action": "slow", "params": ["ms": 300], "timeout_ms": 2000],
            ]
            for call in calls { try socket.send(call) }
            counters.abandonedConnections += 1
            counters.abandonedCalls += calls.count + withDescriptors.count
            abandoned.append((socket, now + UInt64.random(in: 0...300_000_000, using: &rng)))
        } catch {
            violations.add("could not connect a caller", "\(error)")
        }
    }

    /// Closes the abandoned connections that are due (all when `now` is nil).
    func closeAbandoned(now: UInt64?) {
        abandoned.removeAll { entry in
            guard now.map({ entry.closeAt <= $0 }) ?? true else { return false }
            entry.socket.close()
            return true
        }
    }

    /// For the held-call probes: SIGKILLs the running `ChaosOnDemand`
    /// process, if any, and waits (at most `seconds`, polling its status)
    /// until the daemon no longer counts it as running, so that the next call
    /// to it is held while the daemon starts it again. False when that does
    /// not happen in time (the probe is then skipped and counted).
    func bringOnDemandDown(within seconds: Double) -> Bool {
        let target = ChaosTargets.onDemand
        let deadline = monotonicNanos() + UInt64(seconds * 1e9)
        var killed: Set<Int32> = []
        do {
            while true {
                let status = try managedState(target)
                let pids = (status["pids"]?.arrayValue ?? []).compactMap { $0.intValue.map { Int32(truncatingIfNeeded: $0) } }
                managedPIDsSeen[target, default: []].formUnion(pids)
                if status["state"]?.stringValue != "running" { return true }
                for pid in pids where pid > 0 && !killed.contains(pid) {
                    kill(pid, SIGKILL)
                    killed.insert(pid)
                    counters.probeKills += 1
                }
                guard monotonicNanos() < deadline else {
                    counters.probesSkipped += 1
                    return false
                }
                usleep(5_000)  // the polling interval; the deadline bounds it
            }
        } catch {
            violations.add("daemon did not answer a control call", "status \(target): \(error)")
            return false
        }
    }

    // MARK: - A known state for measuring

    /// Every owned process running and registered, every manifest target
    /// stopped (`mediator/stop`, then waiting until it is `activatable`), no
    /// abandoned connection left: the same state before and after a phase.
    func settle(within seconds: Double) throws {
        closeAbandoned(now: nil)
        let deadline = monotonicNanos() + UInt64(seconds * 1e9)
        func remaining() -> Double { Double(Int64(deadline) - Int64(monotonicNanos())) / 1e9 }
        while true {
            reap(now: monotonicNanos())
            restartDue(now: nil)
            let counts = try registeredInstances()
            let missing = ownedInstances.filter { counts[$0.key, default: 0] != $0.value }
            if missing.isEmpty { break }
            guard remaining() > 0 else {
                throw ChaosFailure("owned components did not all register within \(seconds) s: want \(ownedInstances), have \(counts)")
            }
            usleep(50_000)
        }
        for target in managedTargets {
            _ = try? managedPIDs(target)
            _ = try controlResult("stop", ["target": .string(target)])
        }
        for target in managedTargets {
            while true {
                let status = try managedState(target)
                if status["state"]?.stringValue == "activatable" && (status["pids"]?.arrayValue ?? []).isEmpty { break }
                guard remaining() > 0 else {
                    throw ChaosFailure("\(target) did not stop within \(seconds) s: \(status.jsonText)")
                }
                usleep(50_000)
            }
        }
    }

    /// Stops every owned process (SIGTERM, then SIGKILL).
    func stopAll() {
        closeAbandoned(now: nil)
        for process in owned {
            guard let child = process.child else { continue }
            process.killedByUs = true
            Children.stop(child, grace: 3)
            process.child = nil
        }
        control.close()
    }
}
