import ChildProcesses
import Foundation
import Glibc

// One pass: the three shapes against an echo component reached directly,
// then the same through a mediatord started for the pass with the raw client
// and component, then through another new mediatord with the Swift
// library's. Every process is a fresh child; every phase has a time limit.

struct BenchSettings {
    var calls: Int
    var warmup: Int
    var duration: Double
    var inFlight: Int
    var connections: Int
    var payloadBytes: Int
    var phaseTimeout: Double
    var mediatord: String
}

struct ShapeOutcome: Codable {
    var shape: Shape
    var result: ShapeResult?
    var error: String?
    /// mediatord's utime+stime while this shape's client ran, per call (warmup included); brokered only.
    var daemonCPUMicrosPerCall: Double?
}

struct DaemonFigures: Codable {
    var pid: Int32
    /// VmRSS after the last shape, before the daemon is stopped.
    var vmRSSKiB: Int?
    var vmHWMKiB: Int?
    /// From smaps_rollup at the same moment: the proportional share, and the
    /// pages no other process maps (private clean + dirty).
    var pssKiB: Int?
    var privateKiB: Int?
    /// utime+stime over all shapes, and the calls they made (warmup included).
    var cpuSeconds: Double
    var calls: Int
    var cpuMicrosPerCall: Double?
}

struct PassResult: Codable {
    var name: String
    var pinnedCPU: Int?
    var direct: [ShapeOutcome]
    /// Through mediatord with the raw client and component.
    var brokered: [ShapeOutcome]
    var daemon: DaemonFigures?
    var brokeredSetupError: String?
    /// Through mediatord with MediatorClient and Component (empty when skipped).
    var library: [ShapeOutcome]
    var libraryDaemon: DaemonFigures?
    var librarySetupError: String?
    /// The same through the library's Codable calls and actions (empty when skipped).
    var typed: [ShapeOutcome]
    var typedDaemon: DaemonFigures?
    var typedSetupError: String?
    /// The typed column used hand-written Codable types (`--codable`), not generated ones.
    var typedCodable = false
    var wallSeconds: Double
}

struct BenchPass {
    static let brokerSocketName = "mediator.sock"
    static let directSocketName = "direct.sock"

    let settings: BenchSettings
    let workDirectory: String
    let pinnedCPU: Int?
    /// Whether the pass also runs the shapes through the Swift library.
    let library: Bool
    /// Whether the typed column uses hand-written Codable types instead of generated ones.
    let codable: Bool
    private let me = Children.selfExecutable()
    private let startupTimeout = 10.0

    init(settings: BenchSettings, workDirectory: String, pinnedCPU: Int?, library: Bool = false, codable: Bool = false) {
        self.settings = settings
        self.workDirectory = workDirectory
        self.pinnedCPU = pinnedCPU
        self.library = library
        self.codable = codable
    }

    func run() -> PassResult {
        let begin = monotonicNanos()
        // Children inherit the mask, so pinning ourselves pins all of them.
        LinuxExtras.setAffinity(pinnedCPU.map { [$0] })
        defer { LinuxExtras.setAffinity(nil) }

        let direct = runDirect()
        let raw = brokeredOrFailure(.raw)
        let viaLibrary = library ? brokeredOrFailure(.library) : BrokeredOutcome(shapes: [])
        let typed = library ? brokeredOrFailure(.typed(codable: codable)) : BrokeredOutcome(shapes: [])
        return PassResult(
            name: pinnedCPU.map { "pinned: every process on CPU \($0)" } ?? "unpinned",
            pinnedCPU: pinnedCPU, direct: direct, brokered: raw.shapes,
            daemon: raw.daemon, brokeredSetupError: raw.error,
            library: viaLibrary.shapes, libraryDaemon: viaLibrary.daemon, librarySetupError: viaLibrary.error,
            typed: typed.shapes, typedDaemon: typed.daemon, typedSetupError: typed.error, typedCodable: codable,
            wallSeconds: Double(monotonicNanos() - begin) / 1e9)
    }

    // MARK: direct: client <-> echo component, no broker

    private func runDirect() -> [ShapeOutcome] {
        let socketPath = workDirectory + "/" + Self.directSocketName
        do {
            let component = try startComponent(["--listen", socketPath])
            defer { Children.stop(component, signal: SIGKILL) }
            return Shape.allCases.map { runShape($0, socketPath: socketPath, daemon: nil) }
        } catch {
            return Shape.allCases.map { ShapeOutcome(shape: $0, error: "\(error)") }
        }
    }

    // MARK: brokered: client <-> mediatord <-> echo component

    struct BrokeredOutcome {
        var shapes: [ShapeOutcome]
        var daemon: DaemonFigures?
        var error: String?
    }

    /// Who drives mediatord: the raw client and component, or the Swift
    /// library with JSONValue params, or with typed params: generated
    /// (JSONValueConvertible) or hand-written Codable ones.
    enum Driver {
        case raw, library
        case typed(codable: Bool)

        var roleArguments: [String] {
            switch self {
            case .raw: return []
            case .library: return ["--library"]
            case .typed(let codable): return ["--library", "--typed"] + (codable ? ["--codable"] : [])
            }
        }
    }

    private func brokeredOrFailure(_ driver: Driver) -> BrokeredOutcome {
        do {
            return try runBrokered(driver)
        } catch {
            return BrokeredOutcome(shapes: Shape.allCases.map { ShapeOutcome(shape: $0, error: "\(error)") }, error: "\(error)")
        }
    }

    /// The three shapes on a new mediatord, raw or through the Swift library
    /// (client and component alike), with the daemon's figures over them.
    private func runBrokered(_ driver: Driver) throws -> BrokeredOutcome {
        let socketPath = workDirectory + "/" + Self.brokerSocketName
        let daemon = try startDaemon(socketPath: socketPath)
        defer {
            Children.stop(daemon, signal: SIGTERM)
            unlink(socketPath)
        }
        let component = try startComponent(["--connect", socketPath] + driver.roleArguments)
        defer { Children.stop(component, signal: SIGKILL) }

        let cpuBefore = ProcStats.cpuSeconds(daemon.pid) ?? 0
        let shapes = Shape.allCases.map { runShape($0, socketPath: socketPath, daemon: daemon, driver: driver) }
        return BrokeredOutcome(shapes: shapes, daemon: Self.figures(daemon, cpuBefore: cpuBefore, shapes: shapes))
    }

    /// The daemon's RSS now, and its CPU per call since `cpuBefore`.
    static func figures(_ daemon: ChildProcess, cpuBefore: Double, shapes: [ShapeOutcome]) -> DaemonFigures {
        let cpu = (ProcStats.cpuSeconds(daemon.pid) ?? cpuBefore) - cpuBefore
        let calls = shapes.reduce(0) { $0 + ($1.result?.totalCalls ?? 0) }
        return DaemonFigures(
            pid: daemon.pid,
            vmRSSKiB: ProcStats.statusKB(daemon.pid, "VmRSS"), vmHWMKiB: ProcStats.statusKB(daemon.pid, "VmHWM"),
            pssKiB: ProcStats.smapsRollupKB(daemon.pid, "Pss"), privateKiB: ProcStats.privateKB(daemon.pid),
            cpuSeconds: cpu, calls: calls, cpuMicrosPerCall: calls > 0 ? cpu / Double(calls) * 1e6 : nil)
    }

    /// Starts mediatord on `socketPath` and waits until it accepts connections.
    func startDaemon(socketPath: String) throws -> ChildProcess {
        let daemon = try Children.spawn(
            [me, ExecTrampoline.verb, settings.mediatord, "--socket", socketPath, "--log-level", "warning"],
            name: "mediatord")
        do {
            try waitUntilListening(socketPath, daemon: daemon)
        } catch {
            Children.stop(daemon, signal: SIGKILL)
            throw error
        }
        return daemon
    }

    private func waitUntilListening(_ socketPath: String, daemon: ChildProcess) throws {
        let deadline = monotonicNanos() + UInt64(startupTimeout * 1e9)
        while true {
            if let fd = try? UnixSocket.connect(path: socketPath) {
                close(fd)
                return
            }
            guard Children.isRunning(daemon) else { throw BenchError("mediatord exited at start (\(settings.mediatord))") }
            guard monotonicNanos() < deadline else { throw BenchError("mediatord did not listen within \(startupTimeout) s") }
            usleep(5_000)
        }
    }

    /// Starts the echo component and waits for its "ready" line.
    func startComponent(_ arguments: [String]) throws -> ChildProcess {
        let component = try Children.spawn([me, "component"] + arguments, name: "component", output: .pipe)
        do {
            let line = try Children.read(component, until: monotonicNanos() + UInt64(startupTimeout * 1e9), untilNewline: true)
            guard line.hasPrefix("ready") else { throw BenchError("component failed to start") }
        } catch {
            Children.stop(component, signal: SIGKILL)
            throw error
        }
        return component
    }

    // MARK: one shape = one client process

    /// The argv prefix that runs a program as `uid` (its gid the same, no
    /// supplementary groups), or nothing.
    static func asUser(_ uid: UInt32?) -> [String] {
        guard let uid else { return [] }
        return ["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--"]
    }

    /// Runs one shape's client to its end. `user` runs it under another
    /// uid/gid (through setpriv), `target` picks the echo target, `driver`
    /// the client (raw, MediatorClient, its Codable calls), `extraArguments`
    /// go to the client role.
    func runShape(
        _ shape: Shape, socketPath: String, daemon: ChildProcess?, target: String = EchoComponent.defaultTarget,
        user: UInt32? = nil, driver: Driver = .raw, extraArguments: [String] = []
    ) -> ShapeOutcome {
        let cpuBefore = daemon.flatMap { ProcStats.cpuSeconds($0.pid) }
        let arguments = Self.asUser(user) + [
            me, "client", "--socket", socketPath, "--shape", shape.rawValue, "--target", target,
            "--calls", "\(settings.calls)", "--warmup", "\(settings.warmup)",
            "--duration", "\(settings.duration)", "--in-flight", "\(settings.inFlight)",
            "--connections", "\(settings.connections)", "--payload", "\(settings.payloadBytes)",
            "--time-limit", "\(settings.phaseTimeout)",
        ] + driver.roleArguments + extraArguments
        let client: ChildProcess
        do {
            client = try Children.spawn(arguments, name: "client (\(shape.rawValue))", output: .pipe)
        } catch {
            return ShapeOutcome(shape: shape, error: "\(error)")
        }
        // The client stops itself at --time-limit; this is the backstop.
        let deadline = monotonicNanos() + UInt64((settings.phaseTimeout + 10) * 1e9)
        let output: String
        do {
            output = try Children.read(client, until: deadline)
        } catch {
            Children.stop(client, signal: SIGKILL)
            return ShapeOutcome(shape: shape, error: "\(error)")
        }
        let status = Children.wait(client, timeout: 5)
        if status == nil { kill(client.pid, SIGKILL); _ = Children.wait(client, timeout: 5) }
        if let fd = client.stdoutFD { close(fd) }
        guard let status, status == 0 else {
            return ShapeOutcome(shape: shape, error: "client failed (\(status.map(Children.describe) ?? "did not exit"))")
        }
        guard let last = output.split(separator: "\n").last,
              let result = try? JSONDecoder().decode(ShapeResult.self, from: Data(last.utf8)) else {
            return ShapeOutcome(shape: shape, error: "client printed no result")
        }
        var perCall: Double?
        if let daemon, let cpuBefore, let cpuAfter = ProcStats.cpuSeconds(daemon.pid), result.totalCalls > 0 {
            perCall = (cpuAfter - cpuBefore) / Double(result.totalCalls) * 1e6
        }
        return ShapeOutcome(shape: shape, result: result, daemonCPUMicrosPerCall: perCall)
    }
}
