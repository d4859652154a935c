import ArgumentParser
import ChildProcesses
import Foundation
import Glibc
import MediatorProtocol

struct ChaosRun: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "The chaos run (the default). Exits 1 naming each violation.",
        discussion: """
            Starts mediatord on a temporary socket with two manifest targets, starts its own \
            components (Swift and Python), opens the clients, then: measures the daemon's RSS \
            idle; runs a warm-up with the same load and chaos, drains and measures again; runs \
            the chaos for --seconds, drains and measures a third time. See Tests/Chaos/README.md.
            """)

    @Option(help: "Seconds of chaos under load (after the warm-up).")
    var seconds = 60.0

    @Option(help: "Client connections, each keeping --depth calls in flight.")
    var clients = 20

    @Option(help: "Calls each client keeps in flight.")
    var depth = 4

    @Option(help: "Seed of the random choices (default: from the clock); printed.")
    var seed: UInt64?

    @Option(help: "Seconds of warm-up with the same load and chaos, after which the RSS baseline is taken.")
    var warmup = 10.0

    @Option(help: "The RSS after the run may exceed the baseline by at most this many percent.")
    var rssTolerance = 10.0

    @Option(help: "Fewest calls the chaos phase must issue (default: 20 per second) so that it cannot pass idle.")
    var minCalls: Int?

    @Option(help: "The mediatord binary (default: next to this executable).")
    var mediatord: String?

    @Option(help: "Examples/python/notes_component.py (default: found above this executable or the current folder).")
    var notes: String?

    @Option(help: "Tests/Chaos/fds_component.py, the component that passes descriptors (default: found like --notes).")
    var fdsComponent: String?

    @Option(help: "The Python interpreter (default: python3 on PATH).")
    var python: String?

    @Option(help: ArgumentHelp(
        "Leave out one of the issue 10 probes (repeatable): \(Probe.allCases.map(\.rawValue).joined(separator: ", ")).",
        valueName: "probe"))
    var skipProbe: [Probe] = []

    @Option(help: "Percent of the chaos strikes that re-execute the daemon in place (mediator/reexec, issue 28) instead; 0 leaves them out.")
    var reexecPercent = 0

    @Flag(help: "Keep the work folder (logs, manifests) even when the run passes.")
    var keep = false

    func validate() throws {
        guard (0...100).contains(reexecPercent) else { throw ValidationError("--reexec-percent must be 0 to 100") }
        guard seconds > 0, warmup > 0, clients > 0, depth > 0, rssTolerance > 0 else {
            throw ValidationError("--seconds, --warmup, --clients, --depth and --rss-tolerance must be positive")
        }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        // The work folder is not removed on a signal: its logs say what hung.
        ChildTable.installSignalHandlers(
            slots: 256, interruptedMessage: "mediator-chaos: interrupted\n",
            watchdogMessage: "mediator-chaos: FAIL: the run did not finish within its overall bound (something hangs)\n")
        // Nothing may hang: the whole run has a bound, after which the
        // watchdog kills everything and fails.
        alarm(UInt32(warmup + seconds) + 240)

        let chosenSeed = seed ?? UInt64(truncatingIfNeeded: monotonicNanos() ^ UInt64(getpid()))
        print("mediator-chaos: seed \(chosenSeed) (replay the choices with --seed \(chosenSeed))")
        let paths = try resolvePaths()

        let work = try makeTemporaryDirectory(prefix: "mediator-chaos")
        let outcome: Int32
        do {
            let session = try ChaosSession(
                settings: ChaosSession.Settings(
                    seconds: seconds, warmup: warmup, clients: clients, depth: depth, seed: chosenSeed,
                    rssTolerancePercent: rssTolerance, minCalls: minCalls ?? Int(20 * seconds),
                    probes: Set(Probe.allCases).subtracting(skipProbe), reexecPercent: reexecPercent),
                paths: paths, workFolder: work)
            outcome = session.run()
        } catch {
            ChildTable.killAll()
            print("mediator-chaos: FAIL: \(error)")
            print("mediator-chaos: logs kept in \(work)")
            throw ExitCode(1)
        }
        if outcome == 0 && !keep {
            try? FileManager.default.removeItem(atPath: work)
        } else {
            print("mediator-chaos: logs kept in \(work)")
        }
        if outcome != 0 { throw ExitCode(outcome) }
    }

    private func resolvePaths() throws -> ChaosSession.Paths {
        let chaosBinary = Children.selfExecutable()
        let binFolder = URL(fileURLWithPath: chaosBinary).deletingLastPathComponent()
        let daemon = mediatord ?? Children.nextToSelf("mediatord")
        guard access(daemon, X_OK) == 0 else {
            throw ChaosFailure("no executable mediatord at \(daemon); build it (swift build) or pass --mediatord PATH")
        }
        guard let interpreter = python ?? Children.onPath("python3") else {
            throw ChaosFailure("no python3 on PATH; pass --python PATH")
        }
        let starts = [binFolder, URL(fileURLWithPath: FileManager.default.currentDirectoryPath)]
        let script = try notes ?? findScript("Examples/python/notes_component.py", option: "--notes", from: starts)
        let fdsScript = try fdsComponent ?? findScript("Tests/Chaos/fds_component.py", option: "--fds-component", from: starts)
        for path in [script, fdsScript] where access(path, R_OK) != 0 { throw ChaosFailure("cannot read \(path)") }
        return ChaosSession.Paths(
            mediatord: daemon, chaosBinary: chaosBinary, python: interpreter, notesScript: script, fdsScript: fdsScript)
    }

    private func findScript(_ relative: String, option: String, from starts: [URL]) throws -> String {
        for start in starts {
            var folder = start
            for _ in 0..<8 {
                let candidate = folder.appendingPathComponent(relative).path
                if access(candidate, R_OK) == 0 { return candidate }
                folder = folder.deletingLastPathComponent()
            }
        }
        throw ChaosFailure("cannot find \(relative) above this executable or the current folder; pass \(option) PATH")
    }
}
