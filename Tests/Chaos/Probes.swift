import ArgumentParser
import MediatorProtocol

/// The checks added for the classes of defect the first chaos runs missed
/// (issue 10). Each can be left out with `--skip-probe`, so that the rest of
/// the run can be tried against a daemon without the fix it checks.
enum Probe: String, CaseIterable, ExpressibleByArgument {
    /// `mediator/open` nested inside `mediator/open`, in the clients' mix: `forbidden`.
    case nestedOpen = "nested-open"
    /// A call held for `ChaosOnDemand`, sent again with the same id: `bad_request`, `"id": null`.
    case heldDuplicate = "held-duplicate"
    /// A call held for `ChaosOnDemand`, cancelled: `cancelled`.
    case heldCancel = "held-cancel"
    /// One connection joining a pool twice: `already_registered`, one instance listed.
    case poolTwice = "pool-twice"
}

/// Runs the probes that are not part of the clients' mix, between turns of
/// the run's poll loop, every 300-900 ms of a load phase: the held-call
/// probes through the probe client, and the pool probe on connections of its own.
final class Probes {
    let enabled: Set<Probe>
    private let fleet: Fleet
    private let client: LoadClient
    private let violations: Violations
    /// The pool probe's counts; the held-call probes count in the client's tally.
    private(set) var tally = Tally()
    private var poolProbesMade = 0
    private var nextProbe: UInt64 = 0

    static let intervalNs: ClosedRange<UInt64> = 300_000_000...900_000_000
    /// How long the daemon may take to see `ChaosOnDemand` killed.
    static let bringDownSeconds = 2.0

    init(enabled: Set<Probe>, fleet: Fleet, client: LoadClient, violations: Violations) {
        self.enabled = enabled
        self.fleet = fleet
        self.client = client
        self.violations = violations
    }

    /// The probes made by this class, in a fixed order (the draws depend on it).
    private var scheduled: [Probe] {
        [Probe.heldDuplicate, .heldCancel, .poolTwice].filter(enabled.contains)
    }

    /// Makes one probe when it is due.
    func tick(now: UInt64, mix: CallMix, rng: inout SeededGenerator) {
        let probes = scheduled
        guard !probes.isEmpty, now >= nextProbe else { return }
        nextProbe = now + UInt64.random(in: Self.intervalNs, using: &rng)
        switch probes.randomElement(using: &rng) {
        case .heldDuplicate:
            if fleet.bringOnDemandDown(within: Self.bringDownSeconds) { client.sendHeldDuplicate(mix: mix, rng: &rng) }
        case .heldCancel:
            if fleet.bringOnDemandDown(within: Self.bringDownSeconds) { client.sendHeldCancel(mix: mix, rng: &rng) }
        case .poolTwice:
            joinPoolTwice()
        case .nestedOpen, nil:
            break
        }
    }

    /// One connection registers the same pool target twice: the second
    /// `register` must get `already_registered`, and `list` must show one
    /// instance for the connection (found by its `hello` name). The
    /// connection is closed afterwards, which ends its registration.
    func joinPoolTwice() {
        poolProbesMade += 1
        let name = "chaos-pool-probe-\(poolProbesMade)"
        let register: JSONValue = ["target": .string(ChaosTargets.poolProbe), "actions": ["echo"], "mode": "pool"]
        do {
            let socket = try LineSocket.connect(path: fleet.socketPath)
            defer { socket.close() }
            _ = try socket.result("mediator", "hello", params: ["protocol": 1, "name": .string(name)], id: 1)
            let first = try socket.call("mediator", "register", params: register, id: 2)
            guard first["result"] != nil else {
                return violations.add("pool probe could not join the pool once", "\(name): \(first.jsonText)")
            }
            let second = try socket.call("mediator", "register", params: register, id: 3)
            let refused = second["error"]?["code"] == "already_registered"
            if !refused {
                violations.add("one connection joined a pool twice", "\(name): the second register got \(second.jsonText)")
            }
            let listing = try socket.result("mediator", "list", id: 4)
            let entry = listing["targets"]?.arrayValue?.first { $0["target"] == .string(ChaosTargets.poolProbe) }
            let instances = entry?["instances"]?.arrayValue?.filter { $0["name"] == .string(name) }.count ?? 0
            if instances != 1 {
                violations.add(
                    "list shows a connection's pool instance other than once",
                    "\(name): \(instances) instance(s) in \(entry?.jsonText.prefix(300) ?? "no entry")")
            }
            tally.poolJoinProbes += 1
            if refused && instances == 1 { tally.poolSecondJoinsRefused += 1 }
        } catch {
            violations.add("pool probe failed", "\(name): \(error)")
        }
    }
}
