import ArgumentParser
import ChildProcesses
import Dispatch
import Foundation
import Glibc
import MediatorClient
import MediatorProtocol

/// `mediator-chaos component`: a component on `MediatorClient`'s
/// ``Component``. The run starts it itself (`ChaosSwift`, the `ChaosPool`
/// pool) and the daemon starts it from the manifests the run writes
/// (`ChaosOnDemand`, `ChaosDemandPool`, which get the socket and target from
/// `MEDIATOR_SOCKET` and `MEDIATOR_TARGET`).
struct ComponentRole: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "component", abstract: "Role: a chaos component (started by `run` or by mediatord).",
        shouldDisplay: false)

    @Option(help: "The daemon's socket (default: $MEDIATOR_SOCKET).")
    var socket: String?

    @Option(help: "The target to register (default: $MEDIATOR_TARGET).")
    var target: String?

    @Flag(help: "Register in pool mode.")
    var pool = false

    @Flag(help: "Die when the process that started this one dies (PR_SET_PDEATHSIG).")
    var dieWithParent = false

    func run() async throws {
        if dieWithParent { LinuxExtras.dieWithParent() }
        let environment = ProcessInfo.processInfo.environment
        guard let target = target ?? environment["MEDIATOR_TARGET"], NameRules.isValidTarget(target) else {
            throw ValidationError("give --target or MEDIATOR_TARGET (a valid target name)")
        }
        guard let socketPath = socket ?? environment["MEDIATOR_SOCKET"] else {
            throw ValidationError("give --socket or MEDIATOR_SOCKET")
        }
        var component = ChaosComponent.make(target: target, mode: pool ? .pool : .exclusive)
        component.socketPath = socketPath
        component.connectionName = "chaos-\(target)"
        let service = Task { [component] in
            try await component.run()
        }
        // SIGTERM ends it cleanly (exit 0): the graceful half of the chaos.
        let sources = TerminationSignals.cancel(service, on: [SIGTERM, SIGINT])
        do {
            try await service.value
            withExtendedLifetime(sources) {}
            Glibc.exit(0)
        } catch {
            if service.isCancelled { Glibc.exit(0) }
            FileHandle.standardError.write(Data("chaos component \(target): \(error)\n".utf8))
            Glibc.exit(1)
        }
    }
}

/// Signal handling on a dispatch queue: the handler must not be isolated to
/// the main actor, which dispatch would not run it on.
enum TerminationSignals {
    static func cancel(_ task: Task<Void, any Error>, on signals: [Int32]) -> [any DispatchSourceSignal] {
        signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { task.cancel() }
            source.resume()
            return source
        }
    }
}

/// The actions every chaos component serves; each reply path the daemon
/// has (result, component error, partials then final, nothing before the
/// timeout) is one call away.
enum ChaosComponent {
    static let actions = ["echo", "slow", "stream", "fail"]

    static func make(target: String, mode: Component.Mode) -> Component {
        var component = Component(target: target, description: "mediator-chaos component", mode: mode)

        component.addAction("echo", description: "Returns the params.") { context in context.params }

        component.addAction("slow", description: "{ms}: sleeps (cancellable), then {slept: ms}.") { context in
            let ms = max(context.params["ms"]?.intValue ?? 0, 0)
            try await Task.sleep(for: .milliseconds(ms))
            return ["slept": .int(ms)]
        }

        component.addAction("stream", description: "{count, interval_ms}: partials {i: 1...count}, then {done, count}.") { context in
            let count = min(max(context.params["count"]?.intValue ?? 0, 0), 1000)
            let interval = max(context.params["interval_ms"]?.intValue ?? 0, 0)
            var i: Int64 = 1
            while i <= count {
                try Task.checkCancellation()
                await context.send(partial: ["i": .int(i)])
                if interval > 0 { try await Task.sleep(for: .milliseconds(interval)) }
                i += 1
            }
            return ["done": true, "count": .int(count)]
        }

        component.addAction("fail", description: "{code}: answers that error code, passed through by the daemon.") { context in
            let code = context.params["code"]?.stringValue ?? "chaos_failure"
            throw MediatorError(ErrorCode(code), "asked to fail")
        }
        return component
    }
}
