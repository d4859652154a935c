import MediatorProtocol
import Testing

@testable import MediatorDaemon

/// The positions the registry remembers (the last target found, a
/// target's last action spec) must never outlive an insertion or removal.
@Suite("Registry memos")
struct RegistryMemoTests {
    let creds = PeerCredentials(pid: 10, uid: 20, gid: 30)

    func register(_ r: inout Registry, _ name: String, _ actions: [String] = ["a"], connection: ConnectionID, remote: String? = nil) throws {
        _ = try r.register(
            target: name, actions: actions.map { ActionSpec(name: $0) }, mode: .exclusive, description: nil,
            connection: connection, credentials: creds, peerName: nil, remoteHost: remote)
    }

    func name(_ r: inout Registry, _ target: String) -> String? { r.withTarget(target) { $0.name } }

    @Test func lastTargetFoundSurvivesNoInsertionOrRemoval() throws {
        var r = Registry()
        for index in 0..<40 { try register(&r, "T\(index)", connection: index + 1) }
        #expect(name(&r, "T7") == "T7")
        // Removals and insertions move entries (the table grows past its capacity).
        for index in 0..<40 where index != 7 { _ = try r.unregister(target: "T\(index)", connection: index + 1) }
        #expect(name(&r, "T7") == "T7")
        for index in 100..<200 { try register(&r, "T\(index)", connection: index) }
        #expect(name(&r, "T7") == "T7")
        _ = try r.unregister(target: "T7", connection: 8)
        #expect(name(&r, "T7") == nil)
        #expect(name(&r, "T150") == "T150")
    }

    @Test func aCopyKeepsItsOwnTargets() throws {
        var r = Registry()
        try register(&r, "A", connection: 1)
        try register(&r, "B", connection: 2)
        #expect(name(&r, "A") == "A")
        var copy = r
        _ = try r.unregister(target: "A", connection: 1)
        for index in 0..<30 { try register(&r, "N\(index)", connection: 10 + index) }
        #expect(name(&r, "A") == nil)
        #expect(name(&copy, "A") == "A")
        copy.adjustInFlight(target: "A", instance: 1, by: 1)
        #expect(copy.target("A")?.instances.first?.inFlight == 1)
    }

    @Test func lastSpecGoesWithTheActions() throws {
        var r = Registry()
        // A stand-in first: the first local instance then replaces the actions.
        try register(&r, "S", ["old", "a"], connection: 1, remote: "elsewhere")
        let before = r.withTarget("S") { target in target.specSlot("old").map { target.actionsByName.values[$0].name } }
        #expect(before == "old")
        try register(&r, "S", ["new", "b", "c", "d", "e", "f", "g", "h"], connection: 2)
        let after = r.withTarget("S") { target -> [String?] in
            ["old", "new", "new", "h"].map { action in target.specSlot(action).map { target.actionsByName.values[$0].name } }
        }
        #expect(after == [nil, "new", "new", "h"])
    }
}
