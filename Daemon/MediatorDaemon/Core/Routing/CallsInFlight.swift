import MediatorProtocol
import NIOCore

/// The calls the daemon has forwarded and not yet answered, keyed by the id
/// it gave them, with an index by caller (ids in flight, counts). Every call
/// pays for each index twice (insert, remove), so there is none by callee: a
/// closing connection's calls are found by one pass, as its calls as a caller
/// always were.
package struct CallsInFlight: Sendable {
    package struct Call: Sendable {
        /// The id on the forwarded request, unique for the daemon's lifetime.
        package var daemonID: Int64
        package var caller: ConnectionID
        var callerID: MessageID
        /// The caller's id exactly as it arrived, echoed on every response:
        /// a copy of its own, never a slice that keeps the whole frame alive.
        var callerIDBytes: ByteBuffer
        var callee: ConnectionID
        package var target: String
        package var action: String
        package var instance: Int
        package var more: Bool
        package var timeoutMs: Int64
        package var deadline: NIODeadline
        /// When the call was forwarded, for the monitor's timing.
        var startedAt: NIODeadline
        /// The action's `result` schema, which each result must match; nil
        /// (nothing to decode or check) for an action that declares none.
        var resultSchema: Schema? = nil
        /// Its entry in the broker's statistics, found once when it was routed.
        var statisticsSlot = 0
    }

    /// A caller's own id on its connection. The id is the peer's choice, so
    /// the key keeps SipHash (seeded per process), but an integer id (the
    /// usual kind) is hashed as one word, the id mixed with the connection's
    /// number, in SipHash's one-word form: the synthesized hash fed three
    /// words (connection, the enum's case, the id) through a `Hasher`, some
    /// 330 instructions per lookup with the probe, three lookups per call.
    /// For one connection the mix is one-to-one in the id, so a peer cannot
    /// make two of its own keys collide; at most one key of each other
    /// connection shares a word with one of its keys.
    struct CallerKey: Hashable {
        var connection: ConnectionID
        var id: MessageID

        func hash(into hasher: inout Hasher) {
            switch id {
            case .int(let value): hasher.combine(Self.word(connection, value))
            case .string(let text):
                hasher.combine(connection)
                hasher.combine(text)
            }
        }

        /// What Dictionary and Set call.
        func _rawHashValue(seed: Int) -> Int {
            switch id {
            case .int(let value): return Self.word(connection, value)._rawHashValue(seed: seed)  // one-word SipHash
            case .string:
                var hasher = Hasher()
                hasher.combine(seed)
                hash(into: &hasher)
                return hasher.finalize()
            }
        }

        private static func word(_ connection: ConnectionID, _ id: Int64) -> UInt64 {
            UInt64(UInt(bitPattern: connection)) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(bitPattern: id)
        }
    }

    /// A caller's calls in flight, and the bytes their ids keep (counted
    /// against the per-uid quota on bytes held in pending calls).
    struct CallerTally {
        var calls = 0
        var bytes = 0
    }

    /// Keyed by numbers the daemon assigned (``AssignedIDKey``); `byCaller`
    /// holds the callers' own ids, which keep the standard hash.
    private var calls: [AssignedIDKey: Call] = [:]
    private var byCaller: [CallerKey: Int64] = [:]
    private var callerTallies: [AssignedIDKey: CallerTally] = [:]
    private var nextID: Int64 = 1

    package init() {}

    /// The calls a snapshot held (Core/Snapshot), with the id the next call gets.
    init(restoring calls: [Call], nextID: Int64) {
        for call in calls { insert(call) }
        self.nextID = nextID
    }

    /// The id the next forwarded call gets, for a snapshot.
    var nextDaemonID: Int64 { nextID }

    package var count: Int { calls.count }

    mutating func makeDaemonID() -> Int64 {
        defer { nextID += 1 }
        return nextID
    }

    func isInFlight(caller: ConnectionID, id: MessageID) -> Bool {
        byCaller[CallerKey(connection: caller, id: id)] != nil
    }

    package func callsInFlight(of caller: ConnectionID) -> Int { callerTallies[AssignedIDKey(caller)]?.calls ?? 0 }

    /// Bytes the calls of `caller` keep while in flight.
    func bytesHeld(of caller: ConnectionID) -> Int { callerTallies[AssignedIDKey(caller)]?.bytes ?? 0 }

    package func call(_ daemonID: Int64) -> Call? { calls[AssignedIDKey(daemonID)] }

    package func daemonID(caller: ConnectionID, id: MessageID) -> Int64? {
        byCaller[CallerKey(connection: caller, id: id)]
    }

    /// `consuming`: the call moves into the table; borrowed, it was copied
    /// in (a retain of each of its references) and the caller's destroyed.
    package mutating func insert(_ call: consuming Call) {
        let daemonID = call.daemonID
        let callerKey = CallerKey(connection: call.caller, id: call.callerID)
        let bytes = call.callerIDBytes.readableBytes
        let caller = AssignedIDKey(call.caller)
        calls[AssignedIDKey(daemonID)] = consume call
        byCaller[callerKey] = daemonID
        // Changed where it is stored: a dictionary's getter would copy it.
        if let slot = callerTallies.index(forKey: caller) {
            callerTallies.values[slot].calls += 1
            callerTallies.values[slot].bytes += bytes
        } else {
            callerTallies[caller] = CallerTally(calls: 1, bytes: bytes)
        }
    }

    /// Runs `body` on a call where it is stored (a dictionary's getter
    /// copies the whole call); nil when there is no such call.
    mutating func withCall<Result>(_ daemonID: Int64, _ body: (inout Call) -> Result) -> Result? {
        guard let slot = calls.index(forKey: AssignedIDKey(daemonID)) else { return nil }
        return body(&calls.values[slot])
    }

    mutating func setDeadline(_ daemonID: Int64, _ deadline: NIODeadline) {
        calls[AssignedIDKey(daemonID)]?.deadline = deadline
    }

    @discardableResult
    package mutating func remove(_ daemonID: Int64) -> Call? {
        guard let call = calls.removeValue(forKey: AssignedIDKey(daemonID)) else { return nil }
        byCaller[CallerKey(connection: call.caller, id: call.callerID)] = nil
        if let slot = callerTallies.index(forKey: AssignedIDKey(call.caller)) {
            if callerTallies.values[slot].calls > 1 {
                callerTallies.values[slot].calls -= 1
                callerTallies.values[slot].bytes -= call.callerIDBytes.readableBytes
            } else {
                callerTallies.remove(at: slot)
            }
        }
        return call
    }

    package func calls(toCallee callee: ConnectionID) -> [Call] {
        calls.values.filter { $0.callee == callee }.sorted { $0.daemonID < $1.daemonID }
    }

    package func calls(fromCaller caller: ConnectionID) -> [Call] {
        calls.values.filter { $0.caller == caller }.sorted { $0.daemonID < $1.daemonID }
    }

    /// Calls whose deadline has passed, oldest first.
    package func expired(at now: NIODeadline) -> [Call] {
        calls.values.filter { $0.deadline <= now }.sorted { $0.daemonID < $1.daemonID }
    }

    var earliestDeadline: NIODeadline? {
        calls.values.lazy.map(\.deadline).min()
    }

    package var all: [Call] { calls.values.sorted { $0.daemonID < $1.daemonID } }

    /// Gives back the storage of a burst of calls now answered (see ``SparseStorage``).
    @discardableResult
    mutating func shrinkIfSparse() -> Bool {
        let shrank = [calls.shrinkIfSparse(), byCaller.shrinkIfSparse(), callerTallies.shrinkIfSparse()]
        return shrank.contains(true)
    }
}
