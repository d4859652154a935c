import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import MediatorClient
import MediatorProtocol

extension TopOrder: ExpressibleByArgument {}

/// `mediatorctl top`: `mediator/stats` polled, like `systemd-cgtop`.
struct Top: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "A live table of the broker's targets: calls/s, errors/s, p50/p99, in flight; who is refused.",
        discussion: """
            Refreshed every --delay seconds, like systemd-cgtop. The header has the daemon's totals \
            (connections, targets, calls/s, in flight, held, denials/s, quota refusals/s, bad frames); \
            then one row per target (with --target, per action of that target), and, when there is \
            room, the uids with the most refusals and calls in flight. Rates and latencies are over \
            the last interval (the first screen: since the daemon started). Keys: c calls/s, p p99, \
            e errors/s, i in flight, n name (the order), space refresh now, q quit. When stdout is \
            not a terminal, or with --json, one JSON object per refresh, a line each. Reading \
            statistics needs the policy's monitor grant (root and the daemon's user by default).
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "Seconds between refreshes.")
    var delay: Double = 1

    @Option(help: "Stop after this many refreshes (default: until q, Ctrl-C or SIGTERM).")
    var iterations: Int?

    @Option(help: "The order of the rows: calls, p99, errors, inflight or name.")
    var order: TopOrder = .calls

    @Option(help: "Show this target's actions instead of all targets.")
    var target: String?

    func validate() throws {
        guard delay >= 0.1, delay <= 3600 else { throw ValidationError("--delay must be between 0.1 and 3600 seconds") }
        if let iterations, iterations < 1 { throw ValidationError("--iterations must be positive") }
        if let target, !NameRules.isValidTarget(target) {
            throw ValidationError("invalid target name \"\(target)\": expected [A-Za-z][A-Za-z0-9_.-]*")
        }
    }

    enum Event: Sendable {
        case tick
        case key(UInt8)
        case inputClosed
    }

    func run() async throws {
        let interactive = options.peopleByDefault
        let output = options.output
        let client: MediatorClient
        do { client = try await options.connect() } catch { throw output.fail(error) }
        Signals.onTerminate {
            TerminalSession.leave()
            Glibc.exit(0)
        }
        if interactive { TerminalSession.enter() }
        defer { TerminalSession.leave() }

        let (events, continuation) = AsyncStream.makeStream(of: Event.self)
        let ticker = Task {
            while !Task.isCancelled {
                continuation.yield(.tick)
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { ticker.cancel() }
        if interactive && Terminal.isTerminal(STDIN_FILENO) {
            Task {
                for await byte in TerminalSession.keys() { continuation.yield(.key(byte)) }
                continuation.yield(.inputClosed)
            }
        }

        var order = self.order
        var previous: JSONValue?
        var frame: TopFrame?
        var refreshes = 0
        var nextRefresh = ContinuousClock.now
        let (target, timeout) = (self.target, options.timeoutSeconds)
        func show(_ frame: TopFrame) {
            if interactive {
                let lines = TopScreen.lines(
                    frame, order: order, delay: delay, target: target,
                    width: Terminal.columns(STDOUT_FILENO) ?? 80, height: Terminal.rows(STDOUT_FILENO) ?? 24)
                TerminalSession.draw(lines)
            } else {
                Output.write(STDOUT_FILENO, TopScreen.json(frame, order: order, target: target).jsonText + "\n")
            }
        }
        for await event in events {
            switch event {
            case .tick:
                guard ContinuousClock.now >= nextRefresh else { continue }
            case .inputClosed:
                continue  // no more keys; the screen goes on
            case .key(UInt8(ascii: "q")), .key(UInt8(ascii: "Q")):
                await client.close()
                return
            case .key(UInt8(ascii: " ")):
                break
            case .key(let byte):
                guard let newOrder = TopOrder(key: Character(Unicode.Scalar(byte))), var shown = frame else { continue }
                order = newOrder
                TopModel.sort(&shown.rows, by: order)
                frame = shown
                show(shown)
                continue
            }
            let stats: JSONValue
            do {
                stats = try await Deadline.run(seconds: timeout) { try await client.stats(target: target, slowCalls: false) }
            } catch let error as MediatorError {
                TerminalSession.leave()
                await client.close()
                throw output.fail(error)
            }
            let current = TopModel.frame(previous: previous, current: stats, target: target, order: order)
            show(current)
            frame = current
            previous = stats
            refreshes += 1
            if let iterations, refreshes >= iterations { break }
            nextRefresh = ContinuousClock.now + .milliseconds(Int64(delay * 1000))
        }
        await client.close()
    }
}
