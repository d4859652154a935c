import MediatorProtocol
import NIOCore

/// Calls to targets nobody has registered yet, held for a short window
/// after a crash's connections were adopted (issue 28): every peer was told
/// `mediator.reregister`, and a component takes a few hundred milliseconds
/// to register again, so a call in that time would otherwise be answered
/// `target_not_found` for a target that is about to come back.
///
/// A held call goes out when its target registers, and is answered
/// `target_not_found` when the window ends without it, or `timeout` when
/// its own deadline comes first. Pure: the broker carries out what it returns.
struct ReregistrationHold {
    /// When the window ends; nil when it is closed (nothing is held then).
    private(set) var windowEnd: NIODeadline?
    /// The targets whose calls it holds; nil: every target not registered
    /// (after a crash). After a hand-over only the targets the NATS
    /// bridge's stand-ins served are held: the bridge's connection does not
    /// survive it, and the next bridge registers them again.
    private(set) var onlyTargets: Set<String>?
    /// The held calls of each target, in arrival order.
    private var byTarget: [String: [ManagedComponent.HeldCall]] = [:]
    /// Counts, bytes and ids of the held calls: the duplicate-id check,
    /// `cancel`, the limits and a closed connection find them here.
    private(set) var index = HeldCallIndex()

    /// Whether calls to unknown targets are held now.
    func isOpen(at now: NIODeadline) -> Bool {
        guard let windowEnd else { return false }
        return now < windowEnd
    }

    var isEmpty: Bool { index.isEmpty }

    /// Whether a call to `target` (not registered) is held now.
    func holds(_ target: String, at now: NIODeadline) -> Bool {
        isOpen(at: now) && onlyTargets.map { $0.contains(target) } != false
    }

    /// Opens the window (or moves its end) to `end`, for `targets` only or
    /// (nil) for every target; a window open already is widened, never narrowed.
    mutating func open(until end: NIODeadline, only targets: Set<String>? = nil) {
        if windowEnd == nil {
            onlyTargets = targets
        } else if let open = onlyTargets {
            onlyTargets = targets.map { open.union($0) }
        }
        windowEnd = max(windowEnd ?? end, end)
    }

    mutating func hold(_ call: ManagedComponent.HeldCall) {
        index.add(caller: call.caller, id: call.request.id, bytes: call.bytes, target: call.request.target)
        byTarget[call.request.target, default: []].append(call)
    }

    /// `target` registered: its held calls, to route now, in arrival order.
    mutating func release(_ target: String) -> [ManagedComponent.HeldCall] {
        guard !byTarget.isEmpty, let calls = byTarget.removeValue(forKey: target) else { return [] }
        for call in calls { index.remove(caller: call.caller, id: call.request.id, bytes: call.bytes) }
        return calls
    }

    /// What ended by `now`: calls whose own deadline passed, and, once the
    /// window is over, every call still held (the window closes then).
    mutating func expire(now: NIODeadline) -> (timedOut: [ManagedComponent.HeldCall], unclaimed: [ManagedComponent.HeldCall]) {
        guard let windowEnd else { return ([], []) }
        if now >= windowEnd {
            self.windowEnd = nil
            onlyTargets = nil
            let unclaimed = takeAll()
            return ([], unclaimed)
        }
        var timedOut: [ManagedComponent.HeldCall] = []
        for (target, calls) in byTarget where calls.contains(where: { $0.deadline.map { $0 <= now } ?? false }) {
            var kept: [ManagedComponent.HeldCall] = []
            for call in calls {
                if let deadline = call.deadline, deadline <= now {
                    index.remove(caller: call.caller, id: call.request.id, bytes: call.bytes)
                    timedOut.append(call)
                } else {
                    kept.append(call)
                }
            }
            byTarget[target] = kept.isEmpty ? nil : kept
        }
        return (timedOut, [])
    }

    /// When ``expire(now:)`` has something to do next: the window's end or
    /// an earlier deadline of a held call; nil when the window is closed.
    var nextWakeUp: NIODeadline? {
        guard let windowEnd else { return nil }
        var next = windowEnd
        for calls in byTarget.values {
            for call in calls { if let deadline = call.deadline, deadline < next { next = deadline } }
        }
        return next
    }

    /// The caller cancelled a held call: it leaves the queue.
    mutating func cancel(caller: ConnectionID, id: MessageID) -> ManagedComponent.HeldCall? {
        guard let target = index.target(caller: caller, id: id), var calls = byTarget[target],
            let position = calls.firstIndex(where: { $0.caller == caller && $0.request.id == id })
        else { return nil }
        let call = calls.remove(at: position)
        byTarget[target] = calls.isEmpty ? nil : calls
        index.remove(caller: caller, id: id, bytes: call.bytes)
        return call
    }

    /// A connection closed: its held calls go with it.
    mutating func drop(from connection: ConnectionID) -> [ManagedComponent.HeldCall] {
        guard index.calls(of: connection) > 0 else { return [] }
        var dropped: [ManagedComponent.HeldCall] = []
        for (target, calls) in byTarget where calls.contains(where: { $0.caller == connection }) {
            dropped += calls.filter { $0.caller == connection }
            let kept = calls.filter { $0.caller != connection }
            byTarget[target] = kept.isEmpty ? nil : kept
        }
        index.forget(connection)
        return dropped
    }

    /// Ends the window; calls still held stay until taken.
    mutating func close() {
        windowEnd = nil
        onlyTargets = nil
    }

    /// Every held call, the window left open: for a stop or a re-exec.
    mutating func takeAll() -> [ManagedComponent.HeldCall] {
        let all = byTarget.keys.sorted().flatMap { byTarget[$0] ?? [] }
        byTarget = [:]
        index = HeldCallIndex()
        return all
    }
}
