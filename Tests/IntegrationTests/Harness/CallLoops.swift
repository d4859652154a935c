import Foundation
import MediatorProtocol

/// Callers that call in a loop, each on a thread and a connection of its
/// own, and a publisher of numbered events, until stopped; what they saw.
final class CallLoops: @unchecked Sendable {
    struct Report {
        var calls = 0
        var published = 0
        var longest: Duration = .zero
        var failures: [String] = []
    }

    let socketPath: String
    private let lock = NSLock()
    private var report = Report()
    private var stopping = false
    private var threads: [Thread] = []
    private let finished = DispatchGroup()

    init(socketPath: String) {
        self.socketPath = socketPath
    }

    func start(callers: [(target: String, action: String)], publisher event: String) throws {
        for (target, action) in callers {
            let peer = try RawPeer.connect(socketPath)
            run {
                let id = try peer.request(target, action, params: ["n": .int(Int64(self.counts.calls))])
                let started = ContinuousClock.now
                let reply = try peer.response(to: id, within: .seconds(10))
                let took = ContinuousClock.now - started
                guard reply["result"] != nil else { throw HarnessError("\(target)/\(action): \(reply.jsonText)") }
                self.locked { $0.calls += 1; $0.longest = max($0.longest, took) }
            } finally: {
                try peer.expectNothingPendingBeforePing()
            }
        }
        let publisher = try RawPeer.connect(socketPath)
        run {
            let sequence = self.counts.published
            let delivered = try publisher.result("mediator", "publish", params: ["event": .string(event), "data": .int(Int64(sequence))])
            guard delivered["delivered"] == 1 else { throw HarnessError("event \(sequence) delivered \(delivered.jsonText)") }
            self.locked { $0.published += 1 }
        } finally: {
            try publisher.expectNothingPendingBeforePing()
        }
    }

    var counts: Report { locked { $0 } }

    /// Waits until every loop has done a few more rounds (bounded).
    func waitForProgress() throws {
        let target = counts.calls + 20
        let published = counts.published + 5
        try waitUntil("the callers to make progress (\(counts))", within: .seconds(20)) {
            let now = counts
            if let failure = now.failures.first { throw HarnessError(failure) }
            return now.calls >= target && now.published >= published
        }
    }

    /// Stops the loops, waits for them (bounded) and reports.
    @discardableResult
    func stop() -> Report {
        locked { _ in stopping = true }
        if finished.wait(timeout: .now() + 20) == .timedOut { locked { $0.failures.append("a loop did not stop within 20 s") } }
        return counts
    }

    private func run(_ body: @escaping @Sendable () throws -> Void, finally: @escaping @Sendable () throws -> Void) {
        finished.enter()
        let thread = Thread {
            defer { self.finished.leave() }
            do {
                while !self.locked({ _ in self.stopping }) { try body() }
                try finally()
            } catch {
                self.locked { $0.failures.append("\(error)") }
            }
        }
        threads.append(thread)
        thread.start()
    }

    private func locked<T>(_ body: (inout Report) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&report)
    }
}
