import ChildProcesses
import Foundation
import Glibc
import Histogram
import MediatorClient
import MediatorProtocol
import Synchronization

// The roles driven through the Swift library: what an application written
// against MediatorClient and Component gets, library cost included. Same
// call, same shapes and the same ShapeResult fields as the raw roles, so the
// two columns compare line for line.

/// The echo component as an application would write it: a `Component` whose
/// `echo` handler returns the params it got.
enum LibraryEcho {
    static func serve(socketPath: String, target: String, typed: Bool, codable: Bool) async throws {
        var component = Component(target: target, description: "mediator-bench echo (Swift library)")
        // Declared without the interface's schemas (unlike Component(serving:)),
        // so that the daemon's work is the same as for the untyped column.
        if typed && codable {
            component.addAction("echo") { (text: EchoText, _: CallContext) in text }
        } else if typed {
            component.addAction("echo") { (params: EchoParams, _: CallContext) in EchoResult(s: params.s) }
        } else {
            component.addAction("echo") { context in context.params }
        }
        component.socketPath = socketPath
        component.connectionName = "mediator-bench"
        component.onRegistered = { EchoComponent.announceReady() }
        do {
            try await component.run()
        } catch {
            throw BenchError("\(error)")
        }
    }
}

/// The echo's params as a hand-written Codable type (the typed column with
/// `--codable`: Foundation's JSON coders).
struct EchoText: Codable, Sendable, Equatable {
    var s: String
}

/// What the library client sends: a JSONValue; generated params through the
/// generated client (BenchEcho.mediator.json); or an `EchoText` through the
/// Codable calls.
enum EchoPayload: Sendable {
    case json(JSONValue)
    case generated(EchoParams)
    case codable(EchoText)
}

/// The three shapes through `MediatorClient`: one connection per client,
/// calls pipelined on it by concurrent tasks.
enum LibraryBenchClient {
    static func run(_ settings: ClientSettings) async throws -> ShapeResult {
        switch settings.shape {
        case .latency: return try await sequential(settings)
        case .pipelined: return try await pipelined(settings)
        case .connections: return try await manyConnections(settings)
        }
    }

    /// The params every call sends; every answer must equal them.
    private static func echoParams(_ settings: ClientSettings) -> EchoPayload {
        let text = String(decoding: EchoRequest.payload(bytes: settings.payloadBytes), as: UTF8.self)
        if !settings.typed { return .json(.object(["s": .string(text)])) }
        return settings.codable ? .codable(EchoText(s: text)) : .generated(EchoParams(s: text))
    }

    private static func connect(_ settings: ClientSettings) async throws -> MediatorClient {
        do {
            return try await MediatorClient.connect(socketPath: settings.socketPath, name: "mediator-bench")
        } catch {
            throw BenchError("connect \(settings.socketPath): \(error)")
        }
    }

    // The wrappers below run on the caller's executor (`nonisolated(nonsending)`),
    // as an application's own code around a call would: a plain nonisolated
    // async function hops to the generic executor on entry and back, and
    // each hop reads the task's executor preference under its lock (some
    // 1,000 instructions per call for these two levels, none of it the library's).

    /// One call and its check; the round trip in nanoseconds.
    private nonisolated(nonsending) static func call(_ client: MediatorClient, _ target: String, _ params: EchoPayload) async throws -> UInt64 {
        let t0 = monotonicNanos()
        try await exchange(client, target, params)
        return monotonicNanos() - t0
    }

    /// One call and its check, untimed (the throughput shapes count answers).
    private nonisolated(nonsending) static func exchange(_ client: MediatorClient, _ target: String, _ params: EchoPayload) async throws {
        let matched: Bool
        do {
            switch params {
            case .json(let value): matched = try await client.call(target: target, action: "echo", params: value) == value
            case .generated(let params):
                matched = try await BenchEchoClient(client, target: target).echo(params).s == params.s
            case .codable(let text): matched = try await client.call(target: target, action: "echo", params: text, as: EchoText.self) == text
            }
        } catch {
            throw BenchError("call failed: \(error)")
        }
        guard matched else { throw BenchError("echo mismatch") }
    }

    /// Shape 1: `warmup` calls, then `calls` timed calls, one at a time.
    static func sequential(_ settings: ClientSettings) async throws -> ShapeResult {
        let client = try await connect(settings)
        return try await withTaskExecutorPreference(client.executor) {
            try await sequential(settings, client)
        }
    }

    private static func sequential(_ settings: ClientSettings, _ client: MediatorClient) async throws -> ShapeResult {
        let params = echoParams(settings)
        var samples = LatencySamples(expected: settings.calls)
        let hardDeadline = monotonicNanos() + UInt64(settings.timeLimit * 1e9)
        var made = 0
        var stoppedByTimeLimit = false

        while made < settings.warmup {
            try await exchange(client, settings.target, params)
            made += 1
            if made & 255 == 0 && monotonicNanos() >= hardDeadline { stoppedByTimeLimit = true; break }
        }
        let start = monotonicNanos()
        var measured = 0
        while !stoppedByTimeLimit && measured < settings.calls {
            samples.record(try await call(client, settings.target, params))
            measured += 1
            if measured & 255 == 0 && monotonicNanos() >= hardDeadline { stoppedByTimeLimit = true }
        }
        let seconds = Double(monotonicNanos() - start) / 1e9
        await client.close()
        return ShapeResult(
            shape: .latency, connections: 1, inFlightPerConnection: 1, measuredCalls: measured,
            totalCalls: made + measured, seconds: seconds, callsPerSecond: seconds > 0 ? Double(measured) / seconds : 0,
            latencyMicros: samples.summary(), stoppedByTimeLimit: stoppedByTimeLimit)
    }

    /// Shape 2: `inFlight` tasks share one client, each with one call
    /// outstanding, so that `inFlight` calls are pipelined on its
    /// connection. Counts answers for `duration` seconds after `warmup` answers.
    static func pipelined(_ settings: ClientSettings) async throws -> ShapeResult {
        let client = try await connect(settings)
        let params = echoParams(settings)
        let target = settings.target
        let begin = monotonicNanos()
        let meter = PipelineMeter(
            warmup: settings.warmup, duration: UInt64(settings.duration * 1e9),
            hardDeadline: begin + UInt64(settings.timeLimit * 1e9))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<max(settings.inFlight, 1) {
                group.addTask(executorPreference: client.executor) {
                    repeat {
                        try await exchange(client, target, params)
                    } while meter.answered()
                }
            }
            try await group.waitForAll()
        }
        await client.close()
        return meter.result(begin: begin, inFlight: settings.inFlight)
    }

    /// Shape 3: `connections` clients, one task each with one call in
    /// flight. All warm up, then all run `duration` seconds: the two task
    /// groups are the barrier.
    static func manyConnections(_ settings: ClientSettings) async throws -> ShapeResult {
        let count = max(settings.connections, 1)
        let params = echoParams(settings)
        let target = settings.target
        let hardDeadline = monotonicNanos() + UInt64(settings.timeLimit * 1e9)
        let duration = UInt64(settings.duration * 1e9)
        let warmupEach = max(settings.warmup / count, 1)
        var clients: [MediatorClient] = []
        for _ in 0..<count { clients.append(try await connect(settings)) }

        let warmupCalls = try await withThrowingTaskGroup(of: Int.self) { group in
            for client in clients {
                group.addTask {
                    var made = 0
                    while made < warmupEach && monotonicNanos() < hardDeadline {
                        try await exchange(client, target, params)
                        made += 1
                    }
                    return made
                }
            }
            return try await group.reduce(0, +)
        }
        let lanes = try await withThrowingTaskGroup(of: Lane.self) { group in
            for client in clients {
                group.addTask {
                    var lane = Lane(start: monotonicNanos())
                    let stop = min(lane.start + duration, hardDeadline)
                    lane.stoppedByTimeLimit = stop == hardDeadline
                    var now = lane.start
                    while now < stop {
                        lane.histogram.record(try await call(client, target, params))
                        lane.measured += 1
                        now = monotonicNanos()
                    }
                    lane.end = now
                    return lane
                }
            }
            var lanes: [Lane] = []
            for try await lane in group { lanes.append(lane) }
            return lanes
        }
        for client in clients { await client.close() }

        var histogram = newLatencyHistogram()
        for lane in lanes { histogram.add(lane.histogram) }
        let start = lanes.map(\.start).min() ?? 0
        let end = lanes.map(\.end).max() ?? 0
        let measured = lanes.reduce(0) { $0 + $1.measured }
        let seconds = Double(end &- start) / 1e9
        return ShapeResult(
            shape: .connections, connections: count, inFlightPerConnection: 1, measuredCalls: measured,
            totalCalls: warmupCalls + measured, seconds: seconds,
            callsPerSecond: seconds > 0 ? Double(measured) / seconds : 0,
            latencyMicros: measured > 0 ? LatencySummary(histogram) : nil,
            stoppedByTimeLimit: lanes.contains { $0.stoppedByTimeLimit })
    }

    /// One connection's measured stretch in shape 3.
    private struct Lane: Sendable {
        var start: UInt64
        var end: UInt64 = 0
        var measured = 0
        var histogram = newLatencyHistogram()
        var stoppedByTimeLimit = false
    }
}

/// Counts the answers of shape 2's tasks and marks where measuring starts
/// (after `warmup` answers) and ends (`duration` later, or at the hard
/// deadline), as the raw client does between reads. Like the raw client,
/// which reads the clock once per batch of answers it reads, it looks at
/// the clock once every ``clockEvery`` answers (and at the end of warm-up),
/// not per answer: the harness's share of a call is then an atomic add,
/// and the window is still exact to a fraction of a millisecond.
final class PipelineMeter: Sendable {
    private struct State: Sendable {
        var start: (time: UInt64, received: Int)?
        var end: (time: UInt64, received: Int)?
        var stoppedByTimeLimit = false
    }

    static let clockEvery = 64

    private let warmup: Int
    private let duration: UInt64
    private let hardDeadline: UInt64
    private let received = Atomic<Int>(0)
    private let over = Atomic<Bool>(false)
    private let state = Mutex(State())

    init(warmup: Int, duration: UInt64, hardDeadline: UInt64) {
        self.warmup = warmup
        self.duration = duration
        self.hardDeadline = hardDeadline
    }

    /// Counts one answer; false once measuring is over, and the task that
    /// got it then makes no more calls (the others' calls drain).
    func answered() -> Bool {
        let count = received.wrappingAdd(1, ordering: .relaxed).newValue
        guard count % Self.clockEvery == 0 || count == warmup else { return !over.load(ordering: .relaxed) }
        let now = monotonicNanos()
        return state.withLock { state in
            guard state.end == nil else { return false }
            if state.start == nil && count >= warmup { state.start = (now, count) }
            let durationOver = state.start.map { now >= $0.time + duration } ?? false
            if durationOver || now >= hardDeadline {
                state.stoppedByTimeLimit = !durationOver
                state.end = (now, count)
                over.store(true, ordering: .relaxed)
                return false
            }
            return true
        }
    }

    func result(begin: UInt64, inFlight: Int) -> ShapeResult {
        state.withLock { state in
            let from = state.start ?? (begin, 0)
            let total = received.load(ordering: .relaxed)
            let to = state.end ?? (monotonicNanos(), total)
            let seconds = Double(to.time &- from.time) / 1e9
            let measured = to.received - from.received
            return ShapeResult(
                shape: .pipelined, connections: 1, inFlightPerConnection: inFlight, measuredCalls: measured,
                totalCalls: total, seconds: seconds,
                callsPerSecond: seconds > 0 ? Double(measured) / seconds : 0,
                latencyMicros: nil, stoppedByTimeLimit: state.stoppedByTimeLimit)
        }
    }
}
