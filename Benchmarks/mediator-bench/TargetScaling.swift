import ChildProcesses
import Foundation
import Glibc

// Calls/s as registered targets grow (issue 6: "the cost must stay flat").
// For each N: a new mediatord, one raw component connection that registers
// Scale0 ... Scale<N-1> and serves them all, then the raw pipelined client
// with each call to one of the N picked at random. One connection suffices:
// the daemon has no per-connection limit on registrations, and uid 0 (the
// bench runs as root) is exempt from max_registrations_per_uid. A single
// component connection for every N also keeps the component side the same,
// so that only the daemon's registry grows.
//
// The machine is noisy and one 2 s figure per N moves by tens of percent, so
// the counts run twice, up and then down (drift in the background load hits
// both ends alike), and each N keeps its better run.

struct TargetStep: Codable {
    var targets: Int
    /// From starting the component process to its last registration answered.
    var registerSeconds: Double?
    /// The run with the most calls/s.
    var result: ShapeResult?
    /// Calls/s of every run, in the order made.
    var callsPerSecondRuns: [Double] = []
    var error: String?
    /// mediatord's utime+stime per call over the step's client (warmup included).
    var daemonCPUMicrosPerCall: Double?
    /// mediatord's VmRSS after the calls, with the N targets registered.
    var daemonRSSKiB: Int?
}

struct TargetScalingResult: Codable {
    var pinnedCPU: Int?
    var inFlight: Int
    var targetPrefix: String
    var steps: [TargetStep]
}

struct TargetScalingPass {
    static let targetPrefix = "Scale"

    let settings: BenchSettings
    let workDirectory: String
    let pinnedCPU: Int?
    let counts: [Int]
    var rounds = 2

    func run() -> TargetScalingResult {
        // Children inherit the mask, so pinning ourselves pins all of them.
        LinuxExtras.setAffinity(pinnedCPU.map { [$0] })
        defer { LinuxExtras.setAffinity(nil) }
        let pass = BenchPass(settings: settings, workDirectory: workDirectory, pinnedCPU: pinnedCPU)
        var runs: [Int: [TargetStep]] = [:]
        for round in 0..<max(rounds, 1) {
            for count in round % 2 == 0 ? counts : counts.reversed() {
                runs[count, default: []].append(step(count, pass))
            }
        }
        return TargetScalingResult(
            pinnedCPU: pinnedCPU, inFlight: settings.inFlight, targetPrefix: Self.targetPrefix,
            steps: counts.map { Self.best(runs[$0] ?? []) })
    }

    /// The run with the most calls/s, with every run's calls/s; a failed run
    /// only when all failed.
    private static func best(_ runs: [TargetStep]) -> TargetStep {
        let rates = runs.compactMap { $0.result?.callsPerSecond }
        let succeeded = runs.filter { $0.result != nil }
        guard var best = succeeded.max(by: { ($0.result?.callsPerSecond ?? 0) < ($1.result?.callsPerSecond ?? 0) })
            ?? runs.first else {
            return TargetStep(targets: 0, error: "not run")
        }
        best.callsPerSecondRuns = rates
        return best
    }

    private func step(_ count: Int, _ pass: BenchPass) -> TargetStep {
        let socketPath = workDirectory + "/" + BenchPass.brokerSocketName
        do {
            let daemon = try pass.startDaemon(socketPath: socketPath)
            defer {
                Children.stop(daemon, signal: SIGTERM)
                unlink(socketPath)
            }
            let began = monotonicNanos()
            let component = try pass.startComponent(
                ["--connect", socketPath, "--target", Self.targetPrefix, "--targets", "\(count)"])
            defer { Children.stop(component, signal: SIGKILL) }
            let registerSeconds = Double(monotonicNanos() - began) / 1e9
            let outcome = pass.runShape(
                .pipelined, socketPath: socketPath, daemon: daemon, target: Self.targetPrefix,
                extraArguments: ["--targets", "\(count)"])
            return TargetStep(
                targets: count, registerSeconds: registerSeconds, result: outcome.result, error: outcome.error,
                daemonCPUMicrosPerCall: outcome.daemonCPUMicrosPerCall,
                daemonRSSKiB: ProcStats.statusKB(daemon.pid, "VmRSS"))
        } catch {
            return TargetStep(targets: count, error: "\(error)")
        }
    }
}
