import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import MediatorClient

/// The executor's batches: jobs run on the loop's thread, whether enqueued
/// there or from elsewhere, and tasks that keep yielding on it never starve
/// the loop's other work (its I/O, in a connection).
@Suite struct EventLoopTaskExecutorTests {
    /// A connection's loop without a connection: its thread only runs the
    /// jobs it is handed, until the loop is gone.
    static func withLoop<T: Sendable>(_ body: @Sendable (ConnectionLoop, EventLoopTaskExecutor) async throws -> T) async throws -> T {
        let loop = try ConnectionLoop()
        try loop.start {}
        return try await body(loop, EventLoopTaskExecutor(loop))
    }

    @Test func tasksStartedFromAnotherThreadRunOnTheLoop() async throws {
        let onLoop = try await Self.withLoop { loop, executor in
            try await withTimeout {
                await withTaskGroup(of: Bool.self) { group in
                    for _ in 0..<32 {
                        group.addTask(executorPreference: executor) {
                            await Task.yield()
                            return loop.inEventLoop
                        }
                    }
                    return await group.reduce(into: [Bool]()) { $0.append($1) }
                }
            }
        }
        #expect(onLoop.count == 32)
        #expect(onLoop.allSatisfy { $0 })
    }

    /// Tasks that yield forever re-enqueue themselves from inside a batch:
    /// each lands in the next batch, so a loop task scheduled meanwhile runs.
    /// A watchdog stops the spinners after 5 s, so a starved loop fails the
    /// test instead of hanging it.
    @Test func yieldingTasksDoNotStarveTheLoop() async throws {
        let reachedInTime = try await Self.withLoop { loop, executor in
            let stop = NIOLockedValueBox(false)
            let spinners = (0..<8).map { _ in
                Task(executorPreference: executor) {
                    while !stop.withLockedValue({ $0 }) { await Task.yield() }
                }
            }
            let watchdog = Task {
                try? await Task.sleep(for: .seconds(5))
                stop.withLockedValue { $0 = true }
            }
            // Scheduled from the loop itself, while the spinners keep it busy.
            let reachedInTime = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                loop.execute { loop.execute { continuation.resume(returning: !stop.withLockedValue { $0 }) } }
            }
            stop.withLockedValue { $0 = true }
            watchdog.cancel()
            for spinner in spinners { await spinner.value }
            return reachedInTime
        }
        #expect(reachedInTime, "a loop task waited until the spinning tasks were stopped")
    }

    /// A connection's thread ends once the connection closed and nothing
    /// holds its loop any more: one thread per connection must not mean
    /// one thread per connection ever made.
    @Test func aClosedConnectionsThreadEnds() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        weak var weakLoop: ConnectionLoop?
        let thread: UInt
        do {
            let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
            _ = try await withTimeout { try await client.call(target: "Echo", action: "echo") }
            weakLoop = client.connection.loop
            thread = client.connection.loop.threadID
            #expect(ConnectionLoop.isRunning(thread))
            await client.close()
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while ConnectionLoop.isRunning(thread), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(!ConnectionLoop.isRunning(thread), "the connection's thread still runs")
        #expect(weakLoop == nil, "the loop outlived its connection")
    }
}
