import NIOConcurrencyHelpers
import MediatorProtocol
import NIOCore
import Synchronization

/// One response of a `more` call, and whether it is the final one.
public struct StreamItem: Sendable {
    /// The response's `result`.
    public var value: JSONValue
    /// True for the final response (no `"continues": true`): nothing follows it.
    public var isFinal: Bool
    /// The descriptors that came with it (`MediatorClient.markedStream(_:_:params:descriptors:timeout:remoteCaller:)`
    /// only; empty otherwise): `{"$fd": I}` in ``value`` is `descriptors[I]`.
    public var descriptors: [OwnedFileDescriptor] = []
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
    case stream(StreamSink<JSONValue>)
    /// The same, each response marked final or not (``StreamItem``).
    case markedStream(StreamSink<StreamItem>)
    /// A call that takes the descriptors of its answer (``MediatorReply``).
    case reply(UnsafeContinuation<Result<MediatorReply, MediatorError>, Never>)
    /// A `more` call that takes the descriptors of each response.
    case replyStream(StreamSink<MediatorReply>)
    /// A `more` call whose responses are marked final or not and take
    /// their descriptors (the NATS bridge).
    case markedReplyStream(StreamSink<StreamItem>)

    var isStream: Bool {
        switch self {
        case .stream, .markedStream, .replyStream, .markedReplyStream: return true
        case .call, .encodedCall, .reply: return false
        }
    }

    /// Whether the answer's descriptors are for this waiter.
    var acceptsDescriptors: Bool {
        switch self {
        case .reply, .replyStream, .markedReplyStream: return true
        case .call, .encodedCall, .stream, .markedStream: return false
        }
    }

    /// Ends the wait with an error.
    func fail(_ error: MediatorError) {
        switch self {
        case .call(let continuation): continuation.resume(returning: .failure(error))
        case .encodedCall(let continuation): continuation.resume(returning: .failure(error))
        case .stream(let continuation): continuation.finish(throwing: error)
        case .markedStream(let continuation): continuation.finish(throwing: error)
        case .reply(let continuation): continuation.resume(returning: .failure(error))
        case .replyStream(let continuation): continuation.finish(throwing: error)
        case .markedReplyStream(let continuation): continuation.finish(throwing: error)
        }
    }
}

/// A stream's continuation behind a reference. The continuation's type is
/// resilient (its size is not known when this module is compiled): held
/// directly, it would make `Waiter`'s layout, and every table entry's, one
/// computed at run time, each copy of an entry going through the runtime.
final class StreamSink<Element: Sendable>: Sendable {
    private let continuation: AsyncThrowingStream<Element, any Error>.Continuation

    init(_ continuation: AsyncThrowingStream<Element, any Error>.Continuation) {
        self.continuation = continuation
    }

    func yield(_ element: Element) { continuation.yield(element) }
    func finish() { continuation.finish() }
    func finish(throwing error: any Error) { continuation.finish(throwing: error) }
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
    private struct Entry: Sendable {
        var waiter: Waiter
        var bound: TimeAmount
        var deadline: NIODeadline
    }

    private struct State: Sendable {
        var entries: [Int64: Entry] = [:]
        /// Set once the connection closed: the error every later call gets.
        var closedWith: MediatorError?
    }

    // Synchronization's Mutex (a futex), not NIO's pthread lock: two
    // lock/unlock pairs per call, some 80 instructions fewer each.
    private let state = Mutex(State())
    /// Ids are taken outside the lock, so that a call's frame can be built
    /// before its waiter exists and the waiter then enters the table in one
    /// step.
    private let ids = Atomic<Int64>(1)

    /// What a response did to the table.
    enum Delivery {
        /// No entry for that id (late, cancelled, or never ours).
        case unknown
        /// A final answer: resume or finish this waiter.
        case final(Waiter)
        /// A `continues` result for a stream: yield it, the entry stays.
        case partial(Waiter)
    }

    var count: Int { state.withLock { $0.entries.count } }

    /// A new id, never given before on this connection.
    func newID() -> Int64 {
        ids.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Puts the waiter of `id` in the table; the error when the connection
    /// has closed (the waiter is then not in it).
    func insert(_ id: Int64, _ waiter: Waiter, bound: TimeAmount) -> MediatorError? {
        state.withLock { state in
            if let error = state.closedWith { return error }
            state.entries[id] = Entry(waiter: waiter, bound: bound, deadline: .now() + bound)
            return nil
        }
    }

    /// The caller gave up on `id`: removes and returns its waiter (the
    /// caller fails it), nil when it is not in the table.
    func cancel(_ id: Int64) -> Waiter? {
        state.withLock { $0.entries.removeValue(forKey: id)?.waiter }
    }

    /// Whether the waiter of `id` takes the descriptors of its answers;
    /// false when `id` is not in flight.
    func acceptsDescriptors(_ id: Int64) -> Bool {
        state.withLock { $0.entries[id]?.waiter.acceptsDescriptors ?? false }
    }

    /// Routes one response. A `continues` response to a stream keeps the
    /// entry and restarts its deadline (as the daemon restarts the timeout).
    func deliver(_ id: Int64, continues: Bool) -> Delivery {
        state.withLock { state in
            guard let index = state.entries.index(forKey: id) else { return .unknown }
            let waiter = state.entries.values[index].waiter
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
        state.withLock { state in
            var expired: [(id: Int64, waiter: Waiter, bound: TimeAmount)] = []
            for (id, entry) in state.entries where entry.deadline <= now {
                expired.append((id, entry.waiter, entry.bound))
            }
            for item in expired { state.entries[item.id] = nil }
            return expired
        }
    }

    /// Takes every waiter out, the table staying open: after
    /// `mediator.reregister` (a daemon that crashed kept the connection but
    /// lost the calls), the caller fails them; later calls go on as usual.
    func takeAll() -> [Waiter] {
        state.withLock { state in
            let waiters = state.entries.values.map(\.waiter)
            state.entries = [:]
            return waiters
        }
    }

    /// Closes the table: returns every waiter (the caller fails them with
    /// `error`) and makes every later call fail with `error`. Idempotent.
    func close(_ error: MediatorError) -> [Waiter] {
        state.withLock { state in
            if state.closedWith != nil { return [] }
            state.closedWith = error
            let waiters = state.entries.values.map(\.waiter)
            state.entries = [:]
            return waiters
        }
    }
}
