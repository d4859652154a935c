import ArgumentParser
import Foundation
import Glibc

// mediator-bench: brokered (client -> mediatord -> component) versus direct
// (client -> component) calls over Unix sockets, three load shapes, one table.
// The same executable plays every role: `run` (default) starts mediatord, the
// component and one client process per shape; `component` and `client` are
// those roles.

if CommandLine.arguments.count >= 3 && CommandLine.arguments[1] == ExecTrampoline.verb {
    ExecTrampoline.run(Array(CommandLine.arguments.dropFirst(2)))
}
MediatorBench.main()

struct MediatorBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediator-bench",
        abstract: "Measures mediatord: brokered calls versus a direct Unix-socket ping-pong.",
        subcommands: [Run.self, Flood.self, Component.self, Client.self],
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
            mediatord are separate processes too. Every phase stops at --phase-timeout.
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

    @Flag(help: "Also print the results as JSON after the table.")
    var json = false

    func validate() throws {
        guard calls > 0, warmup >= 0, duration > 0, inFlight > 0, connections > 0, payload > 0, phaseTimeout > 0 else {
            throw ValidationError("counts and durations must be positive")
        }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        ChildTable.installSignalHandlers()
        let daemonPath = mediatord
            ?? URL(fileURLWithPath: Children.selfExecutable()).deletingLastPathComponent().appendingPathComponent("mediatord").path
        guard access(daemonPath, X_OK) == 0 else {
            throw BenchError("no executable mediatord at \(daemonPath); build it or pass --mediatord PATH")
        }

        var template = Array("/tmp/mediator-bench.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw BenchError.sys("mkdtemp") }
        let workDirectory = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: workDirectory) }
        ChildTable.removeOnSignal(
            [BenchPass.brokerSocketName, BenchPass.directSocketName].map { workDirectory + "/" + $0 } + [workDirectory])

        let settings = BenchSettings(
            calls: calls, warmup: warmup, duration: duration, inFlight: inFlight, connections: connections,
            payloadBytes: payload, phaseTimeout: phaseTimeout, mediatord: daemonPath)
        let pinnings: [Int?] = pinOnly ? [cpu] : (pin ? [nil, cpu] : [nil])

        var passes: [PassResult] = []
        for pinned in pinnings {
            passes.append(BenchPass(settings: settings, workDirectory: workDirectory, pinnedCPU: pinned).run())
        }
        ChildTable.killAll()

        let report = BenchReport(
            mediatord: daemonPath, cpus: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), payloadBytes: payload,
            calls: calls, warmup: warmup, durationSeconds: duration, inFlight: inFlight,
            connections: connections, passes: passes)
        print(Report.table(report))
        if json { print(Report.json(report)) }
        let failed = passes.contains { pass in (pass.brokered + pass.direct).contains { $0.result == nil } }
        if failed { throw ExitCode(1) }
    }
}

struct Component: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Role: the echo component (started by `run`).", shouldDisplay: false)

    @Option(help: "Connect to mediatord here and register --target.")
    var connect: String?

    @Option(help: "The target to register with mediatord.")
    var target = EchoComponent.defaultTarget

    @Option(help: "Listen here and answer clients directly (no broker).")
    var listen: String?

    func run() throws {
        LinuxExtras.dieWithParent()
        signal(SIGPIPE, SIG_IGN)
        do {
            if let connect {
                try EchoComponent.runBrokered(socketPath: connect, target: target)
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

struct Client: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Role: one shape's client (started by `run`); prints one JSON result.", shouldDisplay: false)

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

    func run() throws {
        LinuxExtras.dieWithParent()
        signal(SIGPIPE, SIG_IGN)
        guard let shape = Shape(rawValue: shape) else { throw ValidationError("unknown shape \(self.shape)") }
        let settings = ClientSettings(
            socketPath: socket, shape: shape, calls: calls, warmup: warmup, duration: duration,
            inFlight: inFlight, connections: connections, payloadBytes: payload, timeLimit: timeLimit,
            target: target)
        do {
            let result = try BenchClient.run(settings)
            let data = try JSONEncoder().encode(result)
            print(String(decoding: data, as: UTF8.self))
        } catch let error as BenchError {
            FileHandle.standardError.write(Data("client (\(shape.rawValue)): \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
