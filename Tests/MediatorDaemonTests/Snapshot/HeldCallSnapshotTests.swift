import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// Calls held for a component that is starting, and `start`s waiting for
/// one, across a snapshot (issue 28): the successor forwards them when the
/// component registers, as the predecessor would have. Those a snapshot
/// cannot carry (with descriptors) are left out and answered by the host.
@Suite("Broker snapshot: held calls and start waiters")
struct HeldCallSnapshotTests {
    static let notes = ComponentActivationTests.manifest("Notes", idle: 30)

    /// Notes is being started (pid 4107 reported, not registered); connection 1
    /// called it once (3 s timeout, a trace context), 1 s before the snapshot.
    func starting() -> BrokerDriver {
        let d = BrokerDriver { $0.componentStopGraceMs = 500 }
        d.apply(d.broker.loadManifests([Self.notes], now: d.now))
        d.connect(1)
        d.send(
            #"{"id":"n1","target":"Notes","action":"add","timeout_ms":3000,"params":{"text":"milk"},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}"#,
            from: 1)
        d.apply(d.broker.processStarted(spawnID: d.spawns[0].spawnID, pid: 4107, now: d.now))
        d.advance(ms: 1_000)
        #expect(d.take(1).isEmpty, "held, not answered")
        return d
    }

    @Test func aHeldCallIsCarriedAndForwardedWhenTheComponentRegisters() throws {
        let original = starting()
        let snapshot = original.broker.snapshot(now: original.now)
        #expect(snapshot.leftOut.heldCalls == 0)
        #expect(snapshot.activation.components.first?.held.count == 1)
        let copy = try ManagedComponentSnapshotTests().restored(original, manifests: [Self.notes])
        #expect(copy.spawns.isEmpty, "the process the predecessor started is waited for, not started again")
        copy.connect(7, credentials: PeerCredentials(pid: 4107, uid: 1007, gid: 2007))
        copy.send(#"{"id":"reg","target":"mediator","action":"register","params":{"target":"Notes","actions":["add"]}}"#, from: 7)
        let lines = copy.takeJSON(7)
        #expect(lines.count == 2, "the registration's answer, then the held call: \(lines)")
        let forwarded = try #require(lines.last)
        #expect(forwarded["action"] == "add")
        #expect(forwarded["params"] == ["text": "milk"])
        #expect(forwarded["traceparent"] == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        // The time it waited is taken off its timeout.
        let timeout = try #require(forwarded["timeout_ms"]?.intValue)
        #expect(timeout <= 2_000 && timeout > 1_900, "\(timeout)")
        let daemonID = try #require(forwarded["id"]?.intValue)
        copy.send(#"{"id":\#(daemonID),"result":{"ok":true}}"#, from: 7)
        #expect(copy.take(1) == [#"{"id":"n1","result":{"ok":true}}"#])
    }

    @Test func itsDeadlineKeepsTheTimeItHadLeft() throws {
        let original = starting()
        let copy = try ManagedComponentSnapshotTests().restored(original, manifests: [Self.notes])
        let restoredAt = copy.now
        copy.advance(ns: (restoredAt + .milliseconds(2_000) - copy.now).nanoseconds - 1)
        copy.expire()
        #expect(copy.take(1).isEmpty, "a nanosecond early")
        copy.advance(ns: 1)
        copy.expire()
        #expect(errorCode(copy.takeOne(1)) == "timeout")
        #expect(!copy.broker.hasHeldCalls)
    }

    @Test func aRestoredHeldCallCountsAndCanBeCancelled() throws {
        let original = starting()
        let copy = try ManagedComponentSnapshotTests().restored(original, manifests: [Self.notes])
        #expect(copy.broker.callsInFlight(of: 1) == 1)
        copy.send(#"{"id":"n1","target":"Notes","action":"add"}"#, from: 1)
        #expect(errorCode(copy.takeOne(1)) == "bad_request", "its id is still in use")
        copy.send(#"{"target":"mediator","action":"cancel","params":{"id":"n1"}}"#, from: 1)
        #expect(errorCode(copy.takeOne(1)) == "cancelled")
        #expect(copy.broker.callsInFlight(of: 1) == 0)
    }

    @Test func aStartWaiterIsCarriedAndAnswered() throws {
        let original = starting()
        original.connect(2)
        original.send(#"{"id":"s1","target":"mediator","action":"start","params":{"target":"Notes"}}"#, from: 2)
        #expect(original.take(2).isEmpty, "waits for the registration")
        let snapshot = original.broker.snapshot(now: original.now)
        #expect(snapshot.activation.startWaiters == [StartWaiterSnapshot(connection: 2, target: "Notes", callerID: #""s1""#)])
        let copy = try ManagedComponentSnapshotTests().restored(original, manifests: [Self.notes])
        copy.connect(7, credentials: PeerCredentials(pid: 4107, uid: 1007, gid: 2007))
        copy.register("Notes", actions: #"["add"]"#, from: 7)
        let answer = try #require(copy.takeOne(2))
        #expect(answer["id"] == "s1")
        #expect(answer["result"] != nil, "\(answer)")
    }

    @Test func aCallWhoseManifestIsGoneIsAnswered() throws {
        let original = starting()
        let copy = try ManagedComponentSnapshotTests().restored(original, manifests: [])
        #expect(errorCode(copy.takeOne(1)) == "target_not_found")
        #expect(!copy.broker.hasHeldCalls)
    }

    @Test func aHeldCallWithDescriptorsIsLeftOutAndAnsweredByTheHandOver() throws {
        let d = starting()
        d.broker.passesDescriptors = true
        _ = d.daemon("hello", #"{"protocol":1,"fds":true}"#, from: 1)
        d.send(#"{"id":"n2","target":"Notes","action":"add","fds":1,"params":{"$fd":0}}"#, descriptors: 1, from: 1)
        #expect(d.broker.hasUncarriedHeldCalls)
        #expect(d.broker.snapshot(now: d.now).leftOut.heldCalls == 1)
        #expect(d.broker.snapshot(now: d.now).activation.components.first?.held.count == 1, "only n1")
        d.apply(d.broker.answerUncarriedHeldCalls(MediatorError(.componentUnavailable, "restarting"), now: d.now))
        let answer = try #require(d.takeOne(1))
        #expect(answer["id"] == "n2")
        #expect(errorCode(answer) == "component_unavailable")
        #expect(d.descriptorsHeld.isEmpty, "its descriptor is closed")
        #expect(!d.broker.hasUncarriedHeldCalls)
        #expect(d.broker.hasHeldCalls, "n1 stays held, to be carried")
    }

    @Test func aHeldCallOfAConnectionNotInTheSnapshotIsRefused() throws {
        let original = starting()
        var snapshot = original.broker.snapshot(now: original.now)
        snapshot.peers.removeAll { $0.connection == 1 }
        #expect(throws: SnapshotError.self) { try snapshot.checkConsistency() }
    }

    @Test func theEncodingReadsBackTheSame() throws {
        let original = starting()
        original.connect(2)
        original.send(#"{"target":"mediator","action":"start","params":{"target":"Notes"}}"#, from: 2)
        original.send(#"{"id":12,"target":"Notes","action":"add","params":{"list":[1,"two\\u00e9",{"k":null}]}}"#, from: 2)
        #expect(original.take(2).isEmpty)
        let snapshot = original.broker.snapshot(now: original.now)
        #expect(snapshot.activation.startWaiters.count == 1)
        #expect(snapshot.activation.components.first?.held.count == 2)
        #expect(try BrokerSnapshot.decode(snapshot.encoded()) == snapshot)
    }

    /// What the package before writes: version 2, no `held` nor
    /// `start_waiters` (it waited for held calls to go out). An upgrade
    /// from it must hand over, not fall back to a clean restart.
    @Test func aVersion2SnapshotIsReadWithNothingHeld() throws {
        let d = BrokerDriver()
        d.apply(d.broker.loadManifests([Self.notes], now: d.now))
        d.connect(1)
        d.connect(7, credentials: PeerCredentials(pid: 4107, uid: 1007, gid: 2007))
        d.register("Notes", actions: #"["add"]"#, from: 7)
        let current = d.broker.snapshot(now: d.now)
        var text = String(decoding: current.encoded(), as: UTF8.self)
        #expect(text.contains(#""held":[]"#) && text.contains(#""start_waiters":[]"#) && text.contains(#""version":3"#))
        for member in [#","held":[]"#, #""held":[],"#, #","start_waiters":[]"#, #""start_waiters":[],"#] {
            text = text.replacingOccurrences(of: member, with: "")
        }
        text = text.replacingOccurrences(of: #""version":3"#, with: #""version":2"#)
        #expect(!text.contains("held\"") && !text.contains("start_waiters"))
        #expect(try BrokerSnapshot.decode(Array(text.utf8)) == current)
        // Version 3's members are required in version 3.
        let missing = text.replacingOccurrences(of: #""version":2"#, with: #""version":3"#)
        #expect(throws: SnapshotError.self) { try BrokerSnapshot.decode(Array(missing.utf8)) }
    }
}
