import NIOConcurrencyHelpers
import Foundation
import MediatorProtocol

@testable import MediatorClient

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Runs `body`, failing with ``TimedOut`` after `seconds`. Every wait in
/// these tests goes through this, so that no test can hang.
func withTimeout<T: Sendable>(
    _ seconds: Double = 5, _ what: String = "an operation", _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TimedOut(what: what)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TimedOut(what: what) }
        return first
    }
}

/// The error a throwing call ended with, or nil when it returned.
/// (Any other error is reported as a `not_a_mediator_error` one.)
func mediatorError<T>(_ body: () async throws -> T) async -> MediatorError? {
    do {
        _ = try await body()
        return nil
    } catch let error as MediatorError {
        return error
    } catch {
        return MediatorError(ErrorCode("not_a_mediator_error"), "\(error)")
    }
}

/// Items posted from anywhere, and waits for them with a predicate.
final class Mailbox<Item: Sendable>: Sendable {
    private struct Waiter: Sendable {
        var count: Int
        var predicate: @Sendable (Item) -> Bool
        var continuation: CheckedContinuation<[Item], any Error>
    }

    private struct State: Sendable {
        var items: [Item] = []
        var waiters: [Int: Waiter] = [:]
        var cancelled: Set<Int> = []
        var nextToken = 0
    }

    private let state = NIOLockedValueBox(State())

    init() {}

    var items: [Item] { state.withLockedValue { $0.items } }

    func post(_ item: Item) {
        let ready: [(CheckedContinuation<[Item], any Error>, [Item])] = state.withLockedValue { state in
            state.items.append(item)
            var ready: [(CheckedContinuation<[Item], any Error>, [Item])] = []
            for (token, waiter) in state.waiters where waiter.predicate(item) {
                let matches = state.items.filter(waiter.predicate)
                if matches.count >= waiter.count {
                    state.waiters[token] = nil
                    ready.append((waiter.continuation, Array(matches.prefix(waiter.count))))
                }
            }
            return ready
        }
        for (continuation, items) in ready { continuation.resume(returning: items) }
    }

    /// The first `count` items (posted so far or later) that match.
    func wait(
        for count: Int = 1, timeout: Double = 5, _ what: String, where predicate: @escaping @Sendable (Item) -> Bool
    ) async throws -> [Item] {
        try await withTimeout(timeout, what) { try await self.next(count, predicate) }
    }

    /// The first item that matches.
    func first(timeout: Double = 5, _ what: String, where predicate: @escaping @Sendable (Item) -> Bool)
        async throws -> Item
    {
        let items = try await wait(for: 1, timeout: timeout, what, where: predicate)
        guard let item = items.first else { throw TimedOut(what: what) }
        return item
    }

    private func next(_ count: Int, _ predicate: @escaping @Sendable (Item) -> Bool) async throws -> [Item] {
        let token = state.withLockedValue { state in
            state.nextToken += 1
            return state.nextToken
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Item], any Error>) in
                let immediate: Result<[Item], any Error>? = state.withLockedValue { state in
                    if state.cancelled.remove(token) != nil { return .failure(CancellationError()) }
                    let matches = state.items.filter(predicate)
                    if matches.count >= count { return .success(Array(matches.prefix(count))) }
                    state.waiters[token] = Waiter(count: count, predicate: predicate, continuation: continuation)
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter: Waiter? = state.withLockedValue { state in
                if let waiter = state.waiters.removeValue(forKey: token) { return waiter }
                state.cancelled.insert(token)
                return nil
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }
}

/// Lets `count` tasks through only once all of them arrived.
actor Gate {
    private let count: Int
    private var arrived = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { self.count = count }

    func arrive() async {
        arrived += 1
        if arrived >= count {
            let all = waiting
            waiting = []
            for continuation in all { continuation.resume() }
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }
}

/// A short, fresh socket path under /tmp.
func temporarySocketPath() -> String {
    "/tmp/mc-\(UUID().uuidString.prefix(8)).sock"
}
