import NIOConcurrencyHelpers
import MediatorProtocol

/// The local subscribers of one connection, each with its patterns and the
/// continuation of the stream that ``MediatorClient/events(_:)`` returned.
///
/// The daemon sends a connection each event once, whatever number of its
/// patterns match (contract section 6); this table then gives the event to
/// every local subscriber with a matching pattern.
final class Subscriptions: Sendable {
    private struct Subscriber: Sendable {
        var patterns: [String]
        var continuation: AsyncThrowingStream<MediatorEvent, any Error>.Continuation
    }

    private struct State: Sendable {
        var nextToken = 0
        var subscribers: [Int: Subscriber] = [:]
        var closed = false
    }

    private let state = NIOLockedValueBox(State())

    /// Adds a subscriber; nil once the connection closed.
    func add(_ patterns: [String], _ continuation: AsyncThrowingStream<MediatorEvent, any Error>.Continuation) -> Int? {
        state.withLockedValue { state in
            if state.closed { return nil }
            let token = state.nextToken
            state.nextToken += 1
            state.subscribers[token] = Subscriber(patterns: patterns, continuation: continuation)
            return token
        }
    }

    /// Every pattern some subscriber holds, each once, sorted.
    var patterns: [String] {
        state.withLockedValue { state in Set(state.subscribers.values.flatMap(\.patterns)).sorted() }
    }

    /// Removes a subscriber; returns its patterns that no other subscriber
    /// holds, which the daemon no longer needs to send.
    func remove(_ token: Int) -> [String] {
        state.withLockedValue { state in
            guard let removed = state.subscribers.removeValue(forKey: token) else { return [] }
            let kept = Set(state.subscribers.values.flatMap(\.patterns))
            var orphans: [String] = []
            for pattern in removed.patterns where !kept.contains(pattern) && !orphans.contains(pattern) {
                orphans.append(pattern)
            }
            return orphans
        }
    }

    /// Removes `patterns` from every subscriber after an explicit
    /// `unsubscribe`; a subscriber left without patterns has its stream
    /// finished.
    func removePatterns(_ patterns: [String]) {
        let finished: [AsyncThrowingStream<MediatorEvent, any Error>.Continuation] = state.withLockedValue { state in
            let dropped = Set(patterns)
            var finished: [AsyncThrowingStream<MediatorEvent, any Error>.Continuation] = []
            for (token, var subscriber) in state.subscribers {
                subscriber.patterns.removeAll { dropped.contains($0) }
                if subscriber.patterns.isEmpty {
                    state.subscribers[token] = nil
                    finished.append(subscriber.continuation)
                } else {
                    state.subscribers[token] = subscriber
                }
            }
            return finished
        }
        for continuation in finished { continuation.finish() }
    }

    /// Gives an event to every matching subscriber. Called on the connection's thread
    /// only, so events keep their order.
    func deliver(_ event: MediatorEvent) {
        let targets: [AsyncThrowingStream<MediatorEvent, any Error>.Continuation] = state.withLockedValue { state in
            state.subscribers.values.compactMap { subscriber in
                EventPattern.matchesAny(subscriber.patterns, event.name) ? subscriber.continuation : nil
            }
        }
        for continuation in targets { continuation.yield(event) }
    }

    /// The connection closed: finishes every stream, with `error` when the
    /// connection was lost rather than closed by its client. Idempotent.
    func close(_ error: MediatorError? = nil) {
        let all: [AsyncThrowingStream<MediatorEvent, any Error>.Continuation] = state.withLockedValue { state in
            state.closed = true
            let all = state.subscribers.values.map(\.continuation)
            state.subscribers = [:]
            return all
        }
        for continuation in all { continuation.finish(throwing: error) }
    }
}
