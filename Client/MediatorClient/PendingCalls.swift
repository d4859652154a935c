import NIOConcurrencyHelpers
import MediatorProtocol
import NIOCore

/// One response of a `more` call, and whether it is the final one.
public struct StreamItem: Sendable {
    public var value: JSONValue
    public var isFinal: Bool
}

/// Who waits for the responses to one request.
///
/// Calls wait on unsafe continuations: a checked one costs an allocation
/// and an atomic per call, and the table below already guarantees the one
/// resume (an entry leaves the table under its lock before its waiter is
/// resumed; the client's tests run every path that resumes).
enum Waiter: Sendable {
    /// A plain call: the first response (result or error) is the answer.
    case call(UnsafeContinuation<Result<JSONValue, MediatorError>, Never>)
    /// A plain call answered with the result's JSON text (typed calls).
    case encodedCall(UnsafeContinuation<Result<[UInt8], MediatorError>, Never>)
    /// A `more` call: each `continues` result is yielded, the final response
    /// ends the stream.
    case stream(AsyncThrowingStream<JSONValue, any Error>.Continuation)
    /// The same, each response marked final or not (``StreamItem``).
    case markedStream(AsyncThrowingStream<StreamItem, any Error>.Continuation)

    var isStream: Bool {
        switch self {
        case .stream, .markedStream: return true
        case .call, .encodedCall: return false
        }
    }

    /// Ends the wait with an error.
    func fail(_ error: MediatorError) {
        switch self {
        case .call(let continuation): continuation.resume(returning: .failure(error))
        case .encodedCall(let continuation): continuation.resume(returning: .failure(error))
        case .stream(let continuation): continuation.finish(throwing: error)
        case .markedStream(let continuation): continuation.finish(throwing: error)
        }
    }
}

/// The table of this connection's requests in flight, keyed by their id
/// (a per-connection counter), like the pending-request table of
/// sourcekit-lsp's JSON-RPC connection: every entry is failed at once when
/// the connection closes, and nothing can be added afterwards.
///
/// Each entry also carries a local deadline: the call's timeout plus a grace
/// period. The daemon answers `timeout` itself; the local deadline only
/// guards against a daemon that stopped answering without closing.
///
/// Continuations are never resumed while the lock is held: methods hand the
/// waiter back to the caller, which resumes it after the lock is released.
final class PendingCalls: Sendable {
    private enum Phase: Sendable {
        /// The id is taken; the caller has not installed its continuation yet.
        case reserved
        /// The calling task was cancelled before its continuation was installed.
        case cancelledEarly
        case waiting(Waiter)
    }

    private struct Entry: Sendable {
        var phase: Phase
        var bound: TimeAmount
        var deadline: NIODeadline
    }

    private struct State: Sendable {
        var nextID: Int64 = 1
        var entries: [Int64: Entry] = [:]
        /// Set once the connection closed: the error every later call gets.
        var closedWith: MediatorError?
    }

    private let state = NIOLockedValueBox(State())

    /// What ``activate(_:_:)`` found.
    enum Activation {
        case activated
        case cancelled
        case closed(MediatorError)
    }

    /// What a response did to the table.
    enum Delivery {
        /// No entry for that id (late, cancelled, or never ours).
        case unknown
        /// A final answer: resume or finish this waiter.
        case final(Waiter)
        /// A `continues` result for a stream: yield it, the entry stays.
        case partial(Waiter)
    }

    var count: Int { state.withLockedValue { $0.entries.count } }

    /// Takes a new id for a call whose continuation is not installed yet.
    func reserve(bound: TimeAmount) -> Result<Int64, MediatorError> {
        state.withLockedValue { state in
            if let error = state.closedWith { return .failure(error) }
            let id = state.nextID
            state.nextID += 1
            state.entries[id] = Entry(phase: .reserved, bound: bound, deadline: .now() + bound)
            return .success(id)
        }
    }

    /// Installs the waiter of a reserved id. The request may be sent only
    /// after `.activated`.
    func activate(_ id: Int64, _ waiter: Waiter) -> Activation {
        state.withLockedValue { state in
            if let error = state.closedWith {
                state.entries[id] = nil
                return .closed(error)
            }
            // One lookup, the entry changed in place; the deadline stays the
            // one taken at reserve(), microseconds earlier.
            var outcome = Activation.closed(.disconnected("the connection closed"))
            if let index = state.entries.index(forKey: id) {
                if case .cancelledEarly = state.entries.values[index].phase {
                    state.entries.remove(at: index)
                    outcome = .cancelled
                } else {
                    state.entries.values[index].phase = .waiting(waiter)
                    outcome = .activated
                }
            }
            return outcome
        }
    }

    /// Takes a new id with its waiter installed at once (streams).
    func insert(_ waiter: Waiter, bound: TimeAmount) -> Result<Int64, MediatorError> {
        state.withLockedValue { state in
            if let error = state.closedWith { return .failure(error) }
            let id = state.nextID
            state.nextID += 1
            state.entries[id] = Entry(phase: .waiting(waiter), bound: bound, deadline: .now() + bound)
            return .success(id)
        }
    }

    /// Forgets an id whose request was never sent.
    func release(_ id: Int64) {
        state.withLockedValue { _ = $0.entries.removeValue(forKey: id) }
    }

    /// The caller gave up on `id`. Returns the waiter when the request was in
    /// flight (the caller resumes it and tells the daemon); nil when it was
    /// not sent yet (``activate(_:_:)`` will report `.cancelled`) or is over.
    func cancel(_ id: Int64) -> Waiter? {
        state.withLockedValue { state in
            guard let entry = state.entries[id] else { return nil }
            switch entry.phase {
            case .reserved:
                state.entries[id]?.phase = .cancelledEarly
                return nil
            case .cancelledEarly:
                return nil
            case .waiting(let waiter):
                state.entries[id] = nil
                return waiter
            }
        }
    }

    /// Routes one response. A `continues` response to a stream keeps the
    /// entry and restarts its deadline (as the daemon restarts the timeout).
    func deliver(_ id: Int64, continues: Bool) -> Delivery {
        state.withLockedValue { state in
            guard let index = state.entries.index(forKey: id),
                case .waiting(let waiter) = state.entries.values[index].phase
            else { return .unknown }
            if continues, waiter.isStream {
                state.entries.values[index].deadline = .now() + state.entries.values[index].bound
                return .partial(waiter)
            }
            state.entries.remove(at: index)
            return .final(waiter)
        }
    }

    /// Removes and returns the in-flight entries whose local deadline passed.
    func expired(now: NIODeadline) -> [(id: Int64, waiter: Waiter, bound: TimeAmount)] {
        state.withLockedValue { state in
            var expired: [(id: Int64, waiter: Waiter, bound: TimeAmount)] = []
            for (id, entry) in state.entries where entry.deadline <= now {
                if case .waiting(let waiter) = entry.phase { expired.append((id, waiter, entry.bound)) }
            }
            for item in expired { state.entries[item.id] = nil }
            return expired
        }
    }

    /// Closes the table: returns every waiter (the caller fails them with
    /// `error`) and makes every later call fail with `error`. Idempotent.
    func close(_ error: MediatorError) -> [Waiter] {
        state.withLockedValue { state in
            if state.closedWith != nil { return [] }
            state.closedWith = error
            var waiters: [Waiter] = []
            waiters.reserveCapacity(state.entries.count)
            for entry in state.entries.values {
                if case .waiting(let waiter) = entry.phase { waiters.append(waiter) }
            }
            // Reserved entries stay: their activate() sees closedWith.
            state.entries = state.entries.filter { _, entry in
                if case .waiting = entry.phase { return false }
                return true
            }
            return waiters
        }
    }
}
