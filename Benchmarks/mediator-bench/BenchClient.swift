import ChildProcesses
import Foundation
import Glibc
import Histogram

/// The three load shapes. Each runs in its own client process, which prints
/// one `ShapeResult` as JSON on stdout.
enum Shape: String, Codable, CaseIterable {
    case latency      // 1 connection, 1 call in flight, closed loop
    case pipelined    // 1 connection, N calls in flight
    case connections  // N connections (one thread each), 1 call in flight each

    func label(inFlight: Int, connections: Int) -> String {
        switch self {
        case .latency: return "sequential, 1 conn, 1 in flight"
        case .pipelined: return "pipelined, 1 conn, \(inFlight) in flight"
        case .connections: return "\(connections) conns (threads), 1 in flight each"
        }
    }
}

struct LatencySummary: Codable {
    var p50: Double
    var p90: Double
    var p99: Double
    var p999: Double
    var max: Double
    var mean: Double

    /// From a histogram of nanoseconds, in microseconds.
    init(_ histogram: Histogram<UInt64>) {
        func micros(_ percentile: Double) -> Double { Double(histogram.valueAtPercentile(percentile)) / 1000 }
        p50 = micros(50)
        p90 = micros(90)
        p99 = micros(99)
        p999 = micros(99.9)
        max = Double(histogram.max) / 1000
        mean = histogram.mean / 1000
    }
}

struct ShapeResult: Codable {
    var shape: Shape
    var connections: Int
    var inFlightPerConnection: Int
    /// Calls counted in the figures (after warmup).
    var measuredCalls: Int
    /// Every call made, warmup included (for CPU per call).
    var totalCalls: Int
    var seconds: Double
    var callsPerSecond: Double
    /// Round trip per call: for `latency` and `connections` (under load); nil for `pipelined`.
    var latencyMicros: LatencySummary?
    /// True when the phase's time limit, not its call count or duration, ended it.
    var stoppedByTimeLimit: Bool
}

struct ClientSettings {
    var socketPath: String
    var shape: Shape
    var calls: Int
    var warmup: Int
    var duration: Double
    var inFlight: Int
    var connections: Int
    var payloadBytes: Int
    var timeLimit: Double
    var target = EchoComponent.defaultTarget
    /// Library only: typed params and result (generated) instead of JSONValue.
    var typed = false
    /// With `typed`: hand-written Codable types (Foundation's coders) instead.
    var codable = false
    /// Pipelined only: when positive, each call goes to `target` followed by
    /// a number in 0 ..< targetCount, picked at random.
    var targetCount = 0

    /// The requests to pick from: one per target.
    var requests: [EchoRequest] {
        guard targetCount > 0 else { return [EchoRequest(payloadBytes: payloadBytes, target: target)] }
        return (0..<targetCount).map { EchoRequest(payloadBytes: payloadBytes, target: target + String($0)) }
    }
}

/// xorshift64*: cheap, and the same sequence in every run.
struct TargetPicker {
    private var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    let count: Int

    init(count: Int) { self.count = max(count, 1) }

    mutating func next() -> Int {
        guard count > 1 else { return 0 }
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return Int((state &* 0x2545_F491_4F6C_DD1D) >> 33) % count
    }
}

func newLatencyHistogram() -> Histogram<UInt64> {
    Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000_000, numberOfSignificantValueDigits: .three)
}

enum BenchClient {
    static let readTimeoutSeconds = 5.0

    static func run(_ settings: ClientSettings) throws -> ShapeResult {
        switch settings.shape {
        case .latency: return try sequential(settings)
        case .pipelined: return try pipelined(settings)
        case .connections: return try manyConnections(settings)
        }
    }

    private static func open(_ settings: ClientSettings) throws -> RawLineSocket {
        let fd = try UnixSocket.connect(path: settings.socketPath)
        UnixSocket.setReceiveTimeout(fd, seconds: readTimeoutSeconds)
        return RawLineSocket(fd: fd)
    }

    /// Shape 1: `warmup` calls, then `calls` timed calls, one at a time.
    static func sequential(_ settings: ClientSettings) throws -> ShapeResult {
        let socket = try open(settings)
        let request = EchoRequest(payloadBytes: settings.payloadBytes, target: settings.target)
        let out = ByteBuffer()
        var samples = LatencySamples(expected: settings.calls)
        let begin = monotonicNanos()
        let hardDeadline = begin + UInt64(settings.timeLimit * 1e9)
        var id = 0
        var stoppedByTimeLimit = false

        func call() throws -> UInt64 {
            id += 1
            out.removeAll()
            request.append(id: id, to: out)
            let t0 = monotonicNanos()
            try socket.writeAll(out)
            guard let line = try socket.readLine() else { throw BenchError("connection closed") }
            let t1 = monotonicNanos()
            let answered = try request.check(line)
            guard answered == id else { throw BenchError("expected id \(id), got \(answered)") }
            return t1 - t0
        }

        var warmed = 0
        while warmed < settings.warmup {
            _ = try call()
            warmed += 1
            if warmed & 255 == 0 && monotonicNanos() >= hardDeadline { stoppedByTimeLimit = true; break }
        }
        let start = monotonicNanos()
        var measured = 0
        while !stoppedByTimeLimit && measured < settings.calls {
            samples.record(try call())
            measured += 1
            if measured & 255 == 0 && monotonicNanos() >= hardDeadline { stoppedByTimeLimit = true }
        }
        let seconds = Double(monotonicNanos() - start) / 1e9
        return ShapeResult(
            shape: .latency, connections: 1, inFlightPerConnection: 1, measuredCalls: measured, totalCalls: id,
            seconds: seconds, callsPerSecond: seconds > 0 ? Double(measured) / seconds : 0,
            latencyMicros: samples.summary(), stoppedByTimeLimit: stoppedByTimeLimit)
    }

    /// Shape 2: keeps `inFlight` calls outstanding on one connection; each
    /// read's answers are replaced by as many new calls in one write.
    /// Counts answers for `duration` seconds after `warmup` answers.
    /// With `targetCount`, each call goes to a target picked at random.
    static func pipelined(_ settings: ClientSettings) throws -> ShapeResult {
        let socket = try open(settings)
        let requests = settings.requests
        var picker = TargetPicker(count: requests.count)
        // Every target echoes the same params, so any request checks any answer.
        let request = requests[0]
        let out = ByteBuffer()
        let begin = monotonicNanos()
        let hardDeadline = begin + UInt64(settings.timeLimit * 1e9)
        var sent = 0
        var received = 0
        var measureStart: (time: UInt64, received: Int)?
        var measureEnd: (time: UInt64, received: Int)?
        var stoppedByTimeLimit = false

        for _ in 0..<max(settings.inFlight, 1) {
            sent += 1
            requests[picker.next()].append(id: sent, to: out)
        }
        try socket.writeAll(out)
        while received < sent {
            var answered = 0
            let lines = try socket.readAvailableLines { line in
                _ = try request.check(line)
                answered += 1
            }
            guard lines != nil else { throw BenchError("connection closed") }
            received += answered
            guard measureEnd == nil else { continue }  // draining
            let now = monotonicNanos()
            if measureStart == nil && received >= settings.warmup {
                measureStart = (now, received)
                announceMeasuring()
            }
            let durationOver = measureStart.map { now >= $0.time + UInt64(settings.duration * 1e9) } ?? false
            if durationOver || now >= hardDeadline {
                stoppedByTimeLimit = !durationOver
                measureEnd = (now, received)
                continue
            }
            out.removeAll()
            for _ in 0..<answered {
                sent += 1
                requests[picker.next()].append(id: sent, to: out)
            }
            try socket.writeAll(out)
        }
        let from = measureStart ?? (begin, 0)
        let to = measureEnd ?? (monotonicNanos(), received)
        let seconds = Double(to.time - from.time) / 1e9
        let measured = to.received - from.received
        return ShapeResult(
            shape: .pipelined, connections: 1, inFlightPerConnection: settings.inFlight, measuredCalls: measured,
            totalCalls: received, seconds: seconds, callsPerSecond: seconds > 0 ? Double(measured) / seconds : 0,
            latencyMicros: nil, stoppedByTimeLimit: stoppedByTimeLimit)
    }

    /// One line on stdout when the warmup is over, for a parent that starts
    /// other work only under full load (the flood); the result line follows later.
    private static func announceMeasuring() {
        let line = "measuring\n"
        _ = line.withCString { write(STDOUT_FILENO, $0, strlen($0)) }
    }

    /// Shape 3: `connections` threads, each with its own connection and one
    /// call in flight. All warm up, meet at a barrier, then run `duration` seconds.
    static func manyConnections(_ settings: ClientSettings) throws -> ShapeResult {
        let count = max(settings.connections, 1)
        let barrier = UnsafeMutablePointer<pthread_barrier_t>.allocate(capacity: 1)
        pthread_barrier_init(barrier, nil, UInt32(count))
        defer {
            pthread_barrier_destroy(barrier)
            barrier.deallocate()
        }
        let hardDeadline = monotonicNanos() + UInt64(settings.timeLimit * 1e9)
        let workers = try (0..<count).map { _ in
            ConnectionWorker(
                socket: try open(settings), request: EchoRequest(payloadBytes: settings.payloadBytes, target: settings.target),
                warmup: max(settings.warmup / count, 1), duration: settings.duration,
                hardDeadline: hardDeadline, barrier: barrier)
        }
        var threads: [pthread_t] = []
        for worker in workers {
            var thread = pthread_t()
            let rc = pthread_create(&thread, nil, { raw in
                let worker = Unmanaged<ConnectionWorker>.fromOpaque(raw!).takeRetainedValue()
                worker.run()
                return nil
            }, Unmanaged.passRetained(worker).toOpaque())
            guard rc == 0 else { throw BenchError.sys("pthread_create", rc) }
            threads.append(thread)
        }
        for thread in threads { pthread_join(thread, nil) }

        if let failure = workers.compactMap(\.failure).first { throw BenchError(failure) }
        var histogram = newLatencyHistogram()
        for worker in workers { histogram.add(worker.histogram) }
        let start = workers.map(\.start).min() ?? 0
        let end = workers.map(\.end).max() ?? 0
        let measured = workers.reduce(0) { $0 + $1.measured }
        let seconds = Double(end &- start) / 1e9
        return ShapeResult(
            shape: .connections, connections: count, inFlightPerConnection: 1, measuredCalls: measured,
            totalCalls: workers.reduce(0) { $0 + $1.nextID }, seconds: seconds,
            callsPerSecond: seconds > 0 ? Double(measured) / seconds : 0,
            latencyMicros: measured > 0 ? LatencySummary(histogram) : nil,
            stoppedByTimeLimit: workers.contains { $0.stoppedByTimeLimit })
    }
}

/// One connection of shape 3, run on its own thread.
/// `@unchecked Sendable`: its thread alone mutates it; the coordinator reads
/// the results only after joining that thread.
private final class ConnectionWorker: @unchecked Sendable {
    let socket: RawLineSocket
    let request: EchoRequest
    let warmup: Int
    let duration: Double
    let hardDeadline: UInt64
    let barrier: UnsafeMutablePointer<pthread_barrier_t>
    let out = ByteBuffer()

    var nextID = 0
    var measured = 0
    var start: UInt64 = 0
    var end: UInt64 = 0
    var histogram = newLatencyHistogram()
    var failure: String?
    var stoppedByTimeLimit = false

    init(socket: RawLineSocket, request: EchoRequest, warmup: Int, duration: Double,
         hardDeadline: UInt64, barrier: UnsafeMutablePointer<pthread_barrier_t>) {
        self.socket = socket
        self.request = request
        self.warmup = warmup
        self.duration = duration
        self.hardDeadline = hardDeadline
        self.barrier = barrier
    }

    private func call() throws -> UInt64 {
        nextID += 1
        out.removeAll()
        request.append(id: nextID, to: out)
        let t0 = monotonicNanos()
        try socket.writeAll(out)
        guard let line = try socket.readLine() else { throw BenchError("connection closed") }
        let t1 = monotonicNanos()
        guard try request.check(line) == nextID else { throw BenchError("answer with an unexpected id") }
        return t1 - t0
    }

    func run() {
        do {
            for _ in 0..<warmup where monotonicNanos() < hardDeadline { _ = try call() }
        } catch {
            failure = "\(error)"
        }
        // Everyone reaches the barrier, failed or not, so nobody waits forever.
        pthread_barrier_wait(barrier)
        guard failure == nil else { return }
        start = monotonicNanos()
        let stop = min(start + UInt64(duration * 1e9), hardDeadline)
        stoppedByTimeLimit = stop == hardDeadline
        do {
            var now = start
            while now < stop {
                histogram.record(try call())
                measured += 1
                now = monotonicNanos()
            }
            end = now
        } catch {
            failure = "\(error)"
            end = monotonicNanos()
        }
    }
}
