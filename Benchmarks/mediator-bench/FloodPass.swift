import ArgumentParser
import ChildProcesses
import Foundation
import Glibc

// `mediator-bench flood`: how much one uid flooding calls hurts another uid.
// A victim uid makes sequential calls to its own echo target, first alone,
// then while a flooding uid keeps `--flood-clients × --flood-in-flight`
// pipelined calls going to another echo target. The figure is the victim's
// loaded p50 over its unloaded p50 (issue: within 2×); a control run on a
// second mediatord during the same flood shows what sharing the CPUs with the
// flood costs by itself, which no broker can remove. Clients run under real
// other uids through setpriv, so per-uid accounting is what is measured: this
// needs root.

struct Flood: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "One uid floods calls while another measures its sequential latency (needs root).")

    @Option(help: "Timed sequential calls of the victim, per measurement.")
    var calls = 5_000

    @Option(help: "Victim warmup calls before each measurement.")
    var warmup = 1_000

    @Option(help: "Flooding client processes (one connection each).")
    var floodClients = 4

    @Option(help: "Calls each flooding connection keeps in flight.")
    var floodInFlight = 64

    @Option(help: "Seconds each flooding client runs after its warmup; must outlast both loaded measurements.")
    var floodSeconds = 10.0

    @Option(help: "The flooding uid (and gid).")
    var floodUID: UInt32 = 4101

    @Option(help: "The victim uid (and gid).")
    var victimUID: UInt32 = 4102

    @Option(help: "Bytes of the string in params.")
    var payload = 100

    @Option(help: "Seconds after which any one phase gives up.")
    var phaseTimeout = 30.0

    @Option(help: "The mediatord binary (default: next to this executable).")
    var mediatord: String?

    @Flag(help: "Also print the results as JSON after the table.")
    var json = false

    func validate() throws {
        guard calls > 0, warmup >= 0, floodClients > 0, floodInFlight > 0, floodSeconds > 0, payload > 0 else {
            throw ValidationError("counts and durations must be positive")
        }
        guard floodUID != 0, victimUID != 0, floodUID != victimUID else {
            throw ValidationError("the two uids must differ and not be 0 (root is exempt from quotas)")
        }
    }

    func run() throws {
        guard getuid() == 0 else { throw BenchError("flood runs clients as other uids through setpriv: run it as root") }
        guard access("/usr/bin/setpriv", X_OK) == 0 else { throw BenchError("needs /usr/bin/setpriv (util-linux)") }
        // The other uids must reach the sockets inside.
        let result = try BenchWorkspace.run(
            prefix: "mediator-flood", mediatord: mediatord,
            sockets: [BenchPass.brokerSocketName, BenchPass.brokerSocketName + Self.controlSuffix], openToOtherUsers: true
        ) { try measure(in: $0) }
        print(result.table)
        if json, let data = try? JSONEncoder().encode(result), let text = String(data: data, encoding: .utf8) {
            print(text)
        }
    }

    /// The control daemon's socket: the flood's, with this after it.
    private static let controlSuffix = ".control"

    private func measure(in workspace: BenchWorkspace) throws -> FloodResult {
        let settings = BenchSettings(
            calls: calls, warmup: warmup, duration: floodSeconds, inFlight: floodInFlight, connections: 1,
            payloadBytes: payload, phaseTimeout: phaseTimeout, mediatord: workspace.mediatord)
        let socketPath = workspace.directory + "/" + BenchPass.brokerSocketName
        let pass = BenchPass(settings: settings, workDirectory: workspace.directory, pinnedCPU: nil)
        let daemon = try pass.startDaemon(socketPath: socketPath)
        defer {
            Children.stop(daemon, signal: SIGTERM)
            unlink(socketPath)
        }
        // Components run as root: the default policy lets only root and the daemon's uid register.
        let victimTarget = EchoComponent.defaultTarget
        let floodTarget = "Flood"
        let victimComponent = try pass.startComponent(["--connect", socketPath, "--target", victimTarget])
        defer { Children.stop(victimComponent, signal: SIGKILL) }
        let floodComponent = try pass.startComponent(["--connect", socketPath, "--target", floodTarget])
        defer { Children.stop(floodComponent, signal: SIGKILL) }

        let alone = pass.runShape(.latency, socketPath: socketPath, daemon: daemon, target: victimTarget, user: victimUID)
        guard let aloneResult = alone.result else { throw BenchError("victim alone: \(alone.error ?? "no result")") }

        // The control: a second mediatord with its own echo component, which
        // the flood never reaches. The victim's latency there under the same
        // flood is what sharing the machine's CPUs alone costs.
        let controlSocket = socketPath + Self.controlSuffix
        let controlDaemon = try pass.startDaemon(socketPath: controlSocket)
        defer {
            Children.stop(controlDaemon, signal: SIGTERM)
            unlink(controlSocket)
        }
        let controlComponent = try pass.startComponent(["--connect", controlSocket, "--target", victimTarget])
        defer { Children.stop(controlComponent, signal: SIGKILL) }

        let floods = try startFlood(pass: pass, socketPath: socketPath, target: floodTarget)
        defer { for flood in floods { Children.stop(flood, signal: SIGKILL) } }
        let cpuBefore = ProcStats.cpuSeconds(daemon.pid) ?? 0
        let loaded = pass.runShape(.latency, socketPath: socketPath, daemon: daemon, target: victimTarget, user: victimUID)
        let cpuDuring = (ProcStats.cpuSeconds(daemon.pid) ?? cpuBefore) - cpuBefore
        guard let loadedResult = loaded.result else { throw BenchError("victim under flood: \(loaded.error ?? "no result")") }
        let control = pass.runShape(.latency, socketPath: controlSocket, daemon: nil, target: victimTarget, user: victimUID)
        guard let controlResult = control.result else { throw BenchError("victim on the control daemon: \(control.error ?? "no result")") }
        // The loaded figure counts only if the flood was still on when it ended.
        guard floods.allSatisfy(Children.isRunning) else {
            throw BenchError("a flooding client ended before the victim's measurement; raise --flood-seconds")
        }
        let floodRate = try finishFlood(floods)
        return FloodResult(
            victimUID: victimUID, floodUID: floodUID, floodConnections: floodClients, floodInFlight: floodInFlight,
            alone: aloneResult, loaded: loadedResult, control: controlResult, floodCallsPerSecond: floodRate,
            daemonCPUShareDuringLoad: loadedResult.seconds > 0 ? cpuDuring / loadedResult.seconds : nil,
            daemonRSSKiB: ProcStats.statusKB(daemon.pid, "VmRSS"))
    }

    /// Starts the flooding clients and returns once each reports full load.
    private func startFlood(pass: BenchPass, socketPath: String, target: String) throws -> [ChildProcess] {
        var floods: [ChildProcess] = []
        do {
            for index in 0..<floodClients {
                let argv = BenchPass.asUser(floodUID) + [
                    Children.selfExecutable(), "client", "--socket", socketPath, "--shape", Shape.pipelined.rawValue,
                    "--target", target, "--in-flight", "\(floodInFlight)", "--warmup", "\(floodInFlight * 4)",
                    "--duration", "\(floodSeconds)", "--payload", "\(payload)", "--time-limit", "\(floodSeconds + phaseTimeout)",
                ]
                floods.append(try Children.spawn(argv, name: "flood \(index)", output: .pipe))
            }
            let deadline = monotonicNanos() + UInt64(phaseTimeout * 1e9)
            for flood in floods {
                let line = try Children.read(flood, until: deadline, untilNewline: true)
                guard line.hasPrefix("measuring") else { throw BenchError("\(flood.name) failed to start: \(line)") }
            }
        } catch {
            for flood in floods { Children.stop(flood, signal: SIGKILL) }
            throw error
        }
        return floods
    }

    /// Waits for the flooding clients' own ends and adds up their throughput.
    private func finishFlood(_ floods: [ChildProcess]) throws -> Double {
        let deadline = monotonicNanos() + UInt64((floodSeconds + phaseTimeout) * 1e9)
        var total = 0.0
        for flood in floods {
            let output = try Children.read(flood, until: deadline)
            guard let last = output.split(separator: "\n").last,
                  let result = try? JSONDecoder().decode(ShapeResult.self, from: Data(last.utf8)) else {
                throw BenchError("\(flood.name) printed no result")
            }
            total += result.callsPerSecond
        }
        return total
    }
}

struct FloodResult: Codable {
    var victimUID: UInt32
    var floodUID: UInt32
    var floodConnections: Int
    var floodInFlight: Int
    var alone: ShapeResult
    var loaded: ShapeResult
    /// The victim on a second mediatord that the flood does not reach, during the flood.
    var control: ShapeResult
    var floodCallsPerSecond: Double
    /// mediatord's CPU time over wall time while the victim measured under load (1.0 = one core busy).
    var daemonCPUShareDuringLoad: Double?
    var daemonRSSKiB: Int?

    var p50Ratio: Double? {
        guard let alone = alone.latencyMicros?.p50, let loaded = loaded.latencyMicros?.p50, alone > 0 else { return nil }
        return loaded / alone
    }

    var table: String {
        func micros(_ value: Double?) -> String { value.map { String(format: "%.1f µs", $0) } ?? "-" }
        let ratio = p50Ratio.map { String(format: "%.2f×", $0) } ?? "-"
        let controlRatio = alone.latencyMicros.flatMap { a in control.latencyMicros.map { String(format: "%.2f×", $0.p50 / a.p50) } } ?? "-"
        let verdict = p50Ratio.map { $0 <= 2.0 ? "met" : "NOT met" } ?? "-"
        return """
            mediator-bench flood: uid \(victimUID) makes sequential calls while uid \(floodUID) keeps \
            \(floodConnections) connections × \(floodInFlight) calls in flight to another target

            | victim uid \(victimUID) | p50 | p99 | calls/s |
            | --- | --- | --- | --- |
            | alone | \(micros(alone.latencyMicros?.p50)) | \(micros(alone.latencyMicros?.p99)) | \(Int(alone.callsPerSecond)) |
            | under flood | \(micros(loaded.latencyMicros?.p50)) | \(micros(loaded.latencyMicros?.p99)) | \(Int(loaded.callsPerSecond)) |
            | control: own mediatord, same flood elsewhere | \(micros(control.latencyMicros?.p50)) | \(micros(control.latencyMicros?.p99)) | \(Int(control.callsPerSecond)) |

            p50 under flood / alone: \(ratio) (target ≤ 2×: \(verdict)); \
            the control's p50 / alone: \(controlRatio) (the cost of sharing the CPUs with the flood at all)
            flood: \(Int(floodCallsPerSecond)) calls/s; mediatord CPU during the loaded run: \
            \(daemonCPUShareDuringLoad.map { String(format: "%.0f%% of a core", $0 * 100) } ?? "-"); \
            RSS \(daemonRSSKiB.map { "\($0 / 1024) MiB" } ?? "-")
            """
    }
}
