import MediatorProtocol
import Testing

@testable import MediatorDaemon

@Suite("Registry")
struct RegistryTests {
    let creds = PeerCredentials(pid: 10, uid: 20, gid: 30)

    func register(
        _ r: inout Registry, _ name: String, _ actions: [ActionSpec] = [ActionSpec(name: "a")], mode: Registry.Mode = .exclusive,
        connection: ConnectionID, peerName: String? = nil
    ) throws(MediatorError) -> Int {
        try r.register(
            target: name, actions: actions, mode: mode, description: nil, connection: connection, credentials: creds,
            peerName: peerName)
    }

    @Test func registerNumbersInstancesAcrossTargets() throws {
        var r = Registry()
        #expect(try register(&r, "A", connection: 1, peerName: "n") == 1)
        #expect(try register(&r, "B", connection: 1) == 2)
        #expect(try register(&r, "P", mode: .pool, connection: 2) == 3)
        #expect(try register(&r, "P", mode: .pool, connection: 3) == 4)
        #expect(r.target("A")?.instances == [Registry.Instance(instance: 1, connection: 1, credentials: creds, name: "n")])
        #expect(r.target("P")?.instances.map(\.connection) == [2, 3])
        #expect(r.target("A")?.actionsByName.keys.sorted() == ["a"])
    }

    @Test func exclusiveAndPoolConflicts() throws {
        var r = Registry()
        _ = try register(&r, "E", connection: 1)
        #expect(throws: MediatorError.self) { _ = try register(&r, "E", connection: 2) }
        do {
            _ = try register(&r, "E", mode: .pool, connection: 2)
            Issue.record("expected already_registered")
        } catch {
            #expect(error.code == .alreadyRegistered)
        }
        _ = try register(&r, "P", [ActionSpec(name: "a"), ActionSpec(name: "b")], mode: .pool, connection: 1)
        do {
            _ = try register(&r, "P", [ActionSpec(name: "b"), ActionSpec(name: "a", description: "x")], mode: .pool, connection: 2)
            Issue.record("expected already_registered")
        } catch {
            #expect(error == MediatorError(.alreadyRegistered, #"pool "P" has different action specs"#))
        }
        do {
            _ = try register(&r, "P", [ActionSpec(name: "a"), ActionSpec(name: "b")], connection: 2)
            Issue.record("expected already_registered")
        } catch {
            #expect(error.code == .alreadyRegistered)
        }
        #expect(try register(&r, "P", [ActionSpec(name: "a"), ActionSpec(name: "b")], mode: .pool, connection: 2) == 3)
    }

    @Test func unregisterChecksOwnership() throws {
        var r = Registry()
        _ = try register(&r, "P", mode: .pool, connection: 1)
        _ = try register(&r, "P", mode: .pool, connection: 2)
        _ = try register(&r, "P", mode: .pool, connection: 1)
        do {
            _ = try r.unregister(target: "P", connection: 3)
            Issue.record("expected forbidden")
        } catch { #expect(error.code == .forbidden) }
        do {
            _ = try r.unregister(target: "Q", connection: 1)
            Issue.record("expected target_not_found")
        } catch { #expect(error.code == .targetNotFound) }
        #expect(try r.unregister(target: "P", connection: 1).map(\.instance) == [1, 3])
        #expect(r.target("P")?.instances.map(\.instance) == [2])
        #expect(try r.unregister(target: "P", connection: 2).map(\.instance) == [2])
        #expect(r.target("P") == nil)
        #expect(r.targets.isEmpty)
    }

    @Test func removeConnectionGivesTargetsSorted() throws {
        var r = Registry()
        _ = try register(&r, "b", connection: 1)
        _ = try register(&r, "A", connection: 1)
        _ = try register(&r, "P", mode: .pool, connection: 1)
        _ = try register(&r, "P", mode: .pool, connection: 2)
        let removed = r.removeConnection(1, targets: ["b", "A", "P", "NotMine"])
        #expect(removed.map(\.target) == ["A", "P", "b"])
        #expect(removed.map(\.instance.instance) == [2, 3, 1])
        #expect(r.targets.keys.sorted() == ["P"])
    }

    @Test func pickInstanceFewestInFlightTiesInTurn() throws {
        var r = Registry()
        #expect(r.pickInstance(of: "P") == nil)
        for c in 1...3 { _ = try register(&r, "P", mode: .pool, connection: c) }
        #expect((0..<6).compactMap { _ in r.pickInstance(of: "P")?.connection } == [1, 2, 3, 1, 2, 3])
        r.adjustInFlight(target: "P", instance: 1, by: 1)
        r.adjustInFlight(target: "P", instance: 3, by: 1)
        #expect(r.pickInstance(of: "P")?.connection == 2)
        #expect(r.pickInstance(of: "P")?.connection == 2)
        r.adjustInFlight(target: "P", instance: 2, by: 2)
        // 1:1, 2:2, 3:1 — the turn is after 2, so 3 then 1.
        #expect(r.pickInstance(of: "P")?.connection == 3)
        #expect(r.pickInstance(of: "P")?.connection == 1)
        r.adjustInFlight(target: "P", instance: 1, by: -1)
        #expect(r.target("P")?.instances.map(\.inFlight) == [0, 2, 1])
        #expect(r.pickInstance(of: "P")?.connection == 1)
        // Unknown targets and instances are ignored.
        r.adjustInFlight(target: "Q", instance: 1, by: 1)
        r.adjustInFlight(target: "P", instance: 99, by: 1)
        #expect(r.target("P")?.instances.map(\.inFlight) == [0, 2, 1])
    }

    @Test func pickInstanceAfterAnInstanceLeaves() throws {
        var r = Registry()
        for c in 1...3 { _ = try register(&r, "P", mode: .pool, connection: c) }
        #expect(r.pickInstance(of: "P")?.connection == 1)
        #expect(r.pickInstance(of: "P")?.connection == 2)
        #expect(r.pickInstance(of: "P")?.connection == 3)  // nextTurn wraps to 0
        _ = try r.unregister(target: "P", connection: 3)
        #expect((0..<4).compactMap { _ in r.pickInstance(of: "P")?.connection } == [1, 2, 1, 2])
        _ = try r.unregister(target: "P", connection: 1)
        #expect(r.pickInstance(of: "P")?.connection == 2)
    }

    @Test func sortedTargetsByBytes() throws {
        var r = Registry()
        for name in ["b", "B", "a.b", "a-b", "a_b", "aa", "A"] { _ = try register(&r, name, connection: 1) }
        #expect(r.sortedTargets.map(\.name) == ["A", "B", "a-b", "a.b", "a_b", "aa", "b"])
    }
}
