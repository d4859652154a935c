import ArgumentParser
import ChildProcesses
import Foundation
import Glibc

// mediator-bench: brokered (client -> mediatord -> component) versus direct
// (client -> component) calls over Unix sockets, three load shapes, one table.
// Brokered runs twice: with the raw-socket client and component (the broker's
// own cost) and with the Swift library's MediatorClient and Component (what
// an application gets). Then calls/s as registered targets grow.
// The same executable plays every role: `run` (default) starts mediatord, the
// component and one client process per shape; `component` and `client` are
// those roles (`--library` for the Swift library's).

ExecTrampoline.runIfRequested()
// Async so that the library roles can await; the raw roles stay synchronous.
await MediatorBench.runChosenRole()

struct MediatorBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediator-bench",
        abstract: "Measures mediatord: brokered calls versus a direct Unix-socket ping-pong.",
        subcommands: [Run.self, Flood.self, ComponentRole.self, ClientRole.self],
        defaultSubcommand: Run.self)
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run every shape brokered and direct, and print the table (the default).",
        discussion: """
            Shapes: 1) sequential latency, one connection, one call in flight (p50/p99 from HdrHistogram); \
            2) throughput with --in-flight pipelined calls on one connection; \
            3) throughput with --connections connections, one thread each in one client process, \
            one call in flight each. Each shape runs in a new client process; the component and \
            mediatord are separate processes too. Brokered runs with the raw client and component, \
            then (unless --no-library) with MediatorClient and Component, each on its own mediatord. \
            Last, --target-counts: pipelined calls/s with N targets registered, each call to one \
            at random, on a new mediatord per N. Every phase stops at --phase-timeout.
            """)

    @Option(help: "Timed calls for the sequential-latency shape.")
    var calls = 20_000

    @Option(help: "Warmup calls before timing (split across connections for shape 3).")
    var warmup = 2_000

    @Option(help: "Seconds each throughput shape runs after its warmup.")
    var duration = 2.0

    @Option(help: "Calls in flight for the pipelined shape.")
    var inFlight = 64

    @Option(help: "Client connections (threads) for shape 3.")
    var connections = 16

    @Option(help: "Bytes of the string in params.")
    var payload = 100

    @Flag(help: "After the unpinned pass, run a second pass with every process pinned to --cpu (stable figures on this VM).")
    var pin = false

    @Flag(help: "Run only the pinned pass.")
    var pinOnly = false

    @Option(help: "The CPU for pinned passes.")
    var cpu = 0

    @Option(help: "Seconds after which any one phase gives up.")
    var phaseTimeout = 20.0

    @Option(help: "The mediatord binary (default: next to this executable).")
    var mediatord: String?

    @Flag(help: "Skip the column driven through the Swift library (MediatorClient and Component).")
    var noLibrary = false

    @Flag(help: "The typed column with hand-written Codable types (Foundation's JSON coders) instead of generated ones.")
    var codable = false

    @Option(help: "Registered-target counts for the target-scaling run, comma-separated; \"\" skips it. Runs pinned to --cpu when --pin or --pin-only.")
    var targetCounts = "1,10,100,1000,10000"

    @Option(help: "Runs per target count (up the list, then down, and so on); the best counts.")
    var targetRounds = 2

    @Flag(help: "Also print the results as JSON after the table.")
    var json = false

    /// --target-counts as numbers.
    var parsedTargetCounts: [Int] {
        targetCounts.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    func validate() throws {
        guard calls > 0, warmup >= 0, duration > 0, inFlight > 0, connections > 0, payload > 0, phaseTimeout > 0,
              targetRounds > 0 else {
            throw ValidationError("counts and durations must be positive")
        }
        let counts = targetCounts.split(separator: ",")
        guard parsedTargetCounts.count == counts.count, parsedTargetCounts.allSatisfy({ $0 > 0 }) else {
            throw ValidationError("--target-counts: positive integers separated by commas")
        }
    }

    func run() throws {
        let report = try BenchWorkspace.run(
            prefix: "mediator-bench", mediatord: mediatord,
            sockets: [BenchPass.brokerSocketName, BenchPass.directSocketName]
        ) { workspace in
            let settings = BenchSettings(
                calls: calls, warmup: warmup, duration: duration, inFlight: inFlight, connections: connections,
                payloadBytes: payload, phaseTimeout: phaseTimeout, mediatord: workspace.mediatord)
            let pinnings: [Int?] = pinOnly ? [cpu] : (pin ? [nil, cpu] : [nil])

            var passes: [PassResult] = []
            for pinned in pinnings {
                passes.append(
                    BenchPass(settings: settings, workDirectory: workspace.directory, pinnedCPU: pinned, library: !noLibrary,
                        codable: codable)
                        .run())
            }
            var targets: TargetScalingResult?
            if !parsedTargetCounts.isEmpty {
                // Pinned when pinning at all: the stable figure on this VM.
                targets = TargetScalingPass(
                    settings: settings, workDirectory: workspace.directory, pinnedCPU: pinnings.last ?? nil,
                    counts: parsedTargetCounts, rounds: targetRounds
                ).run()
            }
            return BenchReport(
                mediatord: workspace.mediatord, cpus: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), payloadBytes: payload,
                calls: calls, warmup: warmup, durationSeconds: duration, inFlight: inFlight,
                connections: connections, passes: passes, targets: targets)
        }
        print(Report.table(report))
        if json { print(Report.json(report)) }
        let failed = report.passes.contains { pass in
            (pass.brokered + pass.direct + pass.library).contains { $0.result == nil }
        } || (report.targets?.steps.contains { $0.result == nil } ?? false)
        if failed { throw ExitCode(1) }
    }
}

// Not `Component`/`Client`: those names are the Swift library's.
struct ComponentRole: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "component", abstract: "Role: the echo component (started by `run`).", shouldDisplay: false)

    @Option(help: "Connect to mediatord here and register --target.")
    var connect: String?

    @Option(help: "The target to register with mediatord.")
    var target = EchoComponent.defaultTarget

    @Option(help: "Register --targets targets named --target followed by 0, 1, ... instead of --target alone (raw only).")
    var targets = 0

    @Option(help: "Listen here and answer clients directly (no broker).")
    var listen: String?

    @Flag(help: "Serve through the Swift library's Component instead of a raw socket (with --connect).")
    var library = false

    @Flag(help: "With --library: a typed action (generated params and result) instead of a JSONValue one.")
    var typed = false
    @Flag(help: "With --typed: hand-written Codable params and result (Foundation's JSON coders).")
    var codable = false

    func run() async throws {
        LinuxExtras.dieWithParent()
        signal(SIGPIPE, SIG_IGN)
        do {
            if library {
                guard let connect, targets == 0 else { throw ValidationError("--library needs --connect and no --targets") }
                try await LibraryEcho.serve(socketPath: connect, target: target, typed: typed, codable: codable)
            } else if let connect {
                let names = targets > 0 ? (0..<targets).map { target + String($0) } : [target]
                try EchoComponent.runBrokered(socketPath: connect, targets: names)
            } else if let listen {
                try EchoComponent.runDirect(socketPath: listen)
            } else {
                throw ValidationError("give --connect or --listen")
            }
        } catch let error as BenchError {
            FileHandle.standardError.write(Data("component: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}

struct ClientRole: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client", abstract: "Role: one shape's client (started by `run`); prints one JSON result.",
        shouldDisplay: false)

    @Option var socket: String
    @Option var shape: String
    @Option var calls = 20_000
    @Option var warmup = 2_000
    @Option var duration = 2.0
    @Option var inFlight = 64
    @Option var connections = 16
    @Option var payload = 100
    @Option var timeLimit = 20.0
    @Option var target = EchoComponent.defaultTarget
    @Option(help: "Pipelined only: spread calls at random over --target followed by 0 ..< N.")
    var targets = 0
    @Flag(help: "Call through the Swift library's MediatorClient instead of a raw socket.")
    var library = false
    @Flag(help: "With --library: typed params and result (generated) instead of JSONValue.")
    var typed = false
    @Flag(help: "With --typed: hand-written Codable params and result (Foundation's JSON coders).")
    var codable = false

    func run() async throws {
        LinuxExtras.dieWithParent()
        signal(SIGPIPE, SIG_IGN)
        guard let shape = Shape(rawValue: shape) else { throw ValidationError("unknown shape \(self.shape)") }
        guard targets == 0 || (shape == .pipelined && !library) else {
            throw ValidationError("--targets is for the raw pipelined shape")
        }
        let settings = ClientSettings(
            socketPath: socket, shape: shape, calls: calls, warmup: warmup, duration: duration,
            inFlight: inFlight, connections: connections, payloadBytes: payload, timeLimit: timeLimit,
            target: target, typed: typed, codable: codable, targetCount: targets)
        do {
            let result = library ? try await LibraryBenchClient.run(settings) : try BenchClient.run(settings)
            let data = try JSONEncoder().encode(result)
            print(String(decoding: data, as: UTF8.self))
        } catch let error as BenchError {
            FileHandle.standardError.write(Data("client (\(shape.rawValue)): \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
