import MediatorProtocol

/// Every call held while its target's component starts (and every `start`
/// waiting for one), indexed by caller: how many each connection has and
/// the bytes they keep, and which target holds each id. Held calls obey the
/// rules routed calls obey: the duplicate-id check and `cancel` find them
/// here, and they count against the calls-in-flight limits and the quota on
/// bytes held in pending calls. The calls themselves wait in their
/// component's queue (``ManagedComponent/held``), in arrival order.
struct HeldCallIndex {
    struct Tally: Equatable {
        var calls = 0
        var bytes = 0
    }

    private(set) var tallies: [ConnectionID: Tally] = [:]
    private var targetsByID: [CallsInFlight.CallerKey: String] = [:]

    var isEmpty: Bool { tallies.isEmpty }

    func calls(of connection: ConnectionID) -> Int { tallies[connection]?.calls ?? 0 }

    func bytes(of connection: ConnectionID) -> Int { tallies[connection]?.bytes ?? 0 }

    /// The target a call with this id from this connection is held for; nil when none is.
    func target(caller: ConnectionID, id: MessageID) -> String? {
        targetsByID[CallsInFlight.CallerKey(connection: caller, id: id)]
    }

    mutating func add(caller: ConnectionID, id: MessageID?, bytes: Int, target: String) {
        tallies[caller, default: Tally()].calls += 1
        tallies[caller, default: Tally()].bytes += bytes
        if let id { targetsByID[CallsInFlight.CallerKey(connection: caller, id: id)] = target }
    }

    /// A held call left its queue: delivered, answered, cancelled or timed out.
    mutating func remove(caller: ConnectionID, id: MessageID?, bytes: Int) {
        if let id { targetsByID[CallsInFlight.CallerKey(connection: caller, id: id)] = nil }
        guard var tally = tallies[caller] else { return }
        tally.calls -= 1
        tally.bytes -= bytes
        tallies[caller] = tally.calls <= 0 ? nil : tally
    }

    /// A connection closed: its held calls are dropped with it.
    mutating func forget(_ connection: ConnectionID) {
        guard tallies.removeValue(forKey: connection) != nil else { return }
        targetsByID = targetsByID.filter { $0.key.connection != connection }
    }
}
