import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// A broker restored from a snapshot (issue 28, first part) routes,
/// answers and expires calls as the original would have.
@Suite struct BrokerSnapshotRestoreTests {
    @Test func restoredBrokerCarriesOnAsTheOriginal() throws {
        let original = SnapshotScenario.richBroker()
        let snapshot = original.broker.snapshot(now: original.now)
        let restored = try SnapshotScenario.restored(from: snapshot)
        let expected = SnapshotScenario.continuation(original)
        let got = SnapshotScenario.continuation(restored)
        #expect(got == expected)
        // The script reached what it is about (a transcript of nothing would match too).
        // (Lines are re-encoded with their members sorted.)
        #expect(expected.contains(#"1: {"id":"c1","result":{"sum":3}}"#))
        #expect(expected.contains(#"1: {"continues":true,"id":"s","result":{"n":2}}"#))
        #expect(expected.contains(#"5: {"data":{"x":1},"event":"news.today"}"#))
        #expect(expected.contains { $0.hasPrefix("6: ") && $0.contains("news.today") })
        #expect(expected.contains { $0.hasPrefix("1: ") && $0.contains(#""id":"g""#) && $0.contains("timeout") })
        #expect(expected.contains { $0.hasPrefix("1: ") && $0.contains(#""id":"c1""#) && $0.contains("timeout") } == false,
            "c1 was answered before its deadline")
        #expect(expected.contains { $0.hasPrefix("1: ") && $0.contains(#""id":"list""#) && $0.contains("adder-two") })
        #expect(expected.contains { $0.hasPrefix("1: ") && $0.contains(#""id":"stats""#) && $0.contains("bad_numbers") })
        #expect(expected.contains { $0.hasPrefix("1: ") && $0.contains("already in flight") })
        #expect(expected.contains(#"3: {"data":{"id":4},"event":"mediator.cancel"}"#), "the cancelled call's component is told")
        #expect(expected.firstIndex(of: "-- 1 leaves").map { expected[$0...].contains { $0.hasPrefix("2: ") && $0.contains("mediator.cancel") } } == true)
    }

    @Test func aResponseReachesItsCallerWithItsID() throws {
        let original = SnapshotScenario.richBroker()
        let d = try SnapshotScenario.restored(from: original.broker.snapshot(now: original.now))
        // Call 4 (`7`, mul) went to connection 3 in the original.
        d.send(#"{"id":4,"result":21}"#, from: 3)
        #expect(d.take(1) == [#"{"id":7,"result":21}"#])
        // Only the callee may answer: 4 answering 2's call is dropped.
        d.send(#"{"id":3,"result":0}"#, from: 4)
        #expect(d.take(1).isEmpty)
    }

    @Test func deadlinesKeepTheTimeTheyHadLeft() throws {
        let original = SnapshotScenario.richBroker()
        let d = try SnapshotScenario.restored(from: original.broker.snapshot(now: original.now))
        let restoredAt = d.now
        // `g` had 500 ms left: the restored broker asks to wake up then.
        #expect(d.wakeUps == [restoredAt + .milliseconds(500)])
        let expiries: [(left: Int64, daemonID: Int64, id: String, target: String, timeout: Int, callee: ConnectionID)] = [
            // The stream's partial, 234 ms after its start, gave it its whole timeout again.
            (500, 6, #""g""#, "Feed", 500, 4), (2_000, 5, #""s""#, "Feed", 2_000, 4), (2_766, 3, #""c1""#, "Calc", 3_000, 2),
        ]
        for expiry in expiries {
            #expect(d.broker.inFlight.call(expiry.daemonID)?.deadline == restoredAt + .milliseconds(expiry.left))
            // A nanosecond early, nothing; on time, the caller's timeout and the component's cancel.
            d.advance(ns: (restoredAt + .milliseconds(expiry.left) - d.now).nanoseconds - 1)
            d.expire()
            #expect(d.take(1).isEmpty, "\(expiry.id) expired early")
            d.advance(ns: 1)
            d.expire()
            let message = #"no response from "\#(expiry.target)" within \#(expiry.timeout) ms"#
            #expect(d.take(1) == [errorLine(id: expiry.id, "timeout", message, delivered: true)])
            #expect(d.takeJSON(expiry.callee) == [#"{"event":"mediator.cancel","data":{"id":\#(expiry.daemonID)}}"#.json])
        }
    }

    @Test func roundRobinContinuesWhereItWas() throws {
        let original = SnapshotScenario.richBroker()
        let d = try SnapshotScenario.restored(from: original.broker.snapshot(now: original.now))
        // Both members have one call in flight; the turn was at the second (3).
        d.send(#"{"id":"n","target":"Calc","action":"add"}"#, from: 1)
        #expect(d.take(3).count == 1)
        #expect(d.take(2).isEmpty)
        #expect(d.broker.inFlight.call(8)?.callee == 3, "new calls get the ids after the snapshot's")
    }

    @Test func aStandInStaysBehindLocalInstances() throws {
        let original = SnapshotScenario.richBroker()
        var snapshot = original.broker.snapshot(now: original.now)
        // Connection 3's instance stands in for another host (the NATS bridge's).
        let calc = try #require(snapshot.targets.firstIndex { $0.name == "Calc" })
        let standIn = try #require(snapshot.targets[calc].instances.firstIndex { $0.connection == 3 })
        snapshot.targets[calc].instances[standIn].remoteHost = "far"
        let d = try SnapshotScenario.restored(from: snapshot)
        // The turn is at 3, but a local instance is there: both calls go to 2.
        for id in ["n1", "n2"] { d.send(#"{"id":"\#(id)","target":"Calc","action":"add"}"#, from: 1) }
        #expect(d.take(2).count == 2)
        #expect(d.take(3).isEmpty)
    }

    /// The bridge's connection closes after a hand-over (its client end was
    /// in the old process): a call to the target its stand-in served waits
    /// for the next bridge to register it, not `target_not_found`; other
    /// unknown targets fail at once.
    @Test func callsToAStandInsTargetWaitForTheNextBridge() throws {
        let original = SnapshotScenario.richBroker()
        var snapshot = original.broker.snapshot(now: original.now)
        let feed = try #require(snapshot.targets.firstIndex { $0.name == "Feed" })
        snapshot.targets[feed].instances[0].remoteHost = "far"
        let d = try SnapshotScenario.restored(from: snapshot)
        d.disconnect(4)
        // Its calls in flight end with it (component_unavailable).
        _ = d.take(1)
        d.send(#"{"id":"f1","target":"Feed","action":"get"}"#, from: 1)
        #expect(d.take(1).isEmpty, "held for the next bridge")
        d.send(#"{"id":"x1","target":"Nowhere","action":"get"}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "target_not_found", "only the stand-ins' targets are held")
        d.connect(9)
        d.send(#"{"id":"reg","target":"mediator","action":"register","params":{"target":"Feed","actions":["get"]}}"#, from: 9)
        d.send(#"{"id":"f2","target":"Feed","action":"get"}"#, from: 1)
        let lines = d.takeJSON(9)
        #expect(lines.first?["result"]?["target"] == "Feed")
        #expect(lines.dropFirst().compactMap { $0["action"]?.stringValue } == ["get", "get"], "the held call, then the new one")
        // Without a stand-in in the snapshot no window opens.
        let plain = try SnapshotScenario.restored(from: original.broker.snapshot(now: original.now))
        plain.disconnect(4)
        _ = plain.take(1)
        plain.send(#"{"id":"f3","target":"Feed","action":"get"}"#, from: 1)
        #expect(errorCode(plain.takeOne(1)) == "target_not_found")
    }

    @Test func restoringIntoABrokerWithConnectionsIsRefused() throws {
        let original = SnapshotScenario.richBroker()
        let snapshot = original.broker.snapshot(now: original.now)
        let other = BrokerDriver()
        other.connect(1)
        #expect(throws: SnapshotError.brokerNotEmpty) { try other.broker.restore(snapshot, now: other.now) }
    }

    @Test func anInconsistentSnapshotIsRefused() throws {
        let original = SnapshotScenario.richBroker()
        var snapshot = original.broker.snapshot(now: original.now)
        snapshot.peers.removeAll { $0.connection == 4 }
        #expect(throws: SnapshotError.self) { try SnapshotScenario.restored(from: snapshot) }

        var reused = original.broker.snapshot(now: original.now)
        reused.nextCallID = 2
        #expect(throws: SnapshotError.self) { try SnapshotScenario.restored(from: reused) }
    }

    @Test func heldCallsAreCountedAsLeftOut() {
        let original = SnapshotScenario.richBroker()
        let snapshot = original.broker.snapshot(now: original.now)
        #expect(snapshot.leftOut == BrokerSnapshot.LeftOut(heldCalls: 0))
    }
}
