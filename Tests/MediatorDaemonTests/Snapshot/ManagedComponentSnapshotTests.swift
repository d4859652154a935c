import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

#if canImport(Glibc)
import Glibc
#endif

/// Managed components across a snapshot (issue 28): a running component
/// stays running, with its process, and the restored broker supervises it.
@Suite("Broker snapshot: managed components")
struct ManagedComponentSnapshotTests {
    /// A broker whose Notes component the daemon started (pid 4107) and which registered.
    func running() -> BrokerDriver {
        let d = BrokerDriver { $0.componentStopGraceMs = 500 }
        d.apply(d.broker.loadManifests([ComponentActivationTests.manifest("Notes", idle: 30)], now: d.now))
        d.connect(1)
        d.send(#"{"id":1,"target":"Notes","action":"add"}"#, from: 1)
        d.apply(d.broker.processStarted(spawnID: d.spawns[0].spawnID, pid: 4107, now: d.now))
        d.connect(7)
        d.send(#"{"id":"reg","target":"mediator","action":"register","params":{"target":"Notes","actions":["add"]}}"#, from: 7)
        d.send(#"{"id":1,"result":{}}"#, from: 7)
        for connection in [1, 7] { _ = d.take(connection) }
        d.advance(ms: 2_000)
        return d
    }

    /// A new broker with the same manifests, restored from `d`'s snapshot through its encoding.
    func restored(_ d: BrokerDriver, manifests: [Manifest] = [ComponentActivationTests.manifest("Notes", idle: 30)]) throws
        -> BrokerDriver
    {
        let snapshot = try BrokerSnapshot.decode(d.broker.snapshot(now: d.now).encoded())
        let broker = Broker(configuration: d.broker.configuration, version: "9.8.7-test", logger: .init(label: "mediator-daemon-tests"))
        broker.logger.logLevel = .critical
        let start = NIODeadline.uptimeNanoseconds(90_000_000_000)
        let copy = BrokerDriver(broker: broker, start: start, now: start + .milliseconds(5))
        copy.apply(broker.loadManifests(manifests, now: copy.now))
        copy.apply(try broker.restore(snapshot, now: copy.now))
        return copy
    }

    @Test func aRunningComponentStaysRunningWithItsProcess() throws {
        let original = running()
        let copy = try restored(original)
        let status = copy.daemon("status", #"{"target":"Notes"}"#, from: 1)?["result"]
        #expect(status?["state"] == "running", "\(String(describing: status))")
        #expect(status?["pids"] == [4107])
        #expect(copy.spawns.isEmpty, "nothing started again")
        #expect(copy.broker.snapshot(now: copy.now).activation.components == original.broker.snapshot(now: original.now).activation.components)
    }

    @Test func itsExitReachesTheRestoredBrokerWhichRestartsIt() throws {
        let original = running()
        let spawnID = original.spawns[0].spawnID
        let copy = try restored(original)
        copy.apply(copy.broker.processExited(spawnID: spawnID, end: .exited(3), now: copy.now))
        let status = copy.daemon("status", #"{"target":"Notes"}"#, from: 1)?["result"]
        #expect(status?["last_exit"] == "exited with status 3", "\(String(describing: status))")
        copy.advance(ms: 1_000)
        copy.apply(copy.broker.expireCalls(now: copy.now))
        #expect(copy.spawns.count == 1, "restarted once its backoff passed")
        #expect(copy.spawns.first.map { $0.spawnID > spawnID } == true, "with a spawn id after the predecessor's")
    }

    @Test func theIdleExitKeepsItsTimeAcrossTheSnapshot() throws {
        let original = running()
        let copy = try restored(original)
        // 2 s of the 30 s passed before the snapshot.
        copy.advance(ms: 27_000)
        copy.apply(copy.broker.expireCalls(now: copy.now))
        #expect(copy.daemon("status", #"{"target":"Notes"}"#, from: 1)?["result"]?["state"] == "running")
        copy.advance(ms: 1_500)
        copy.apply(copy.broker.expireCalls(now: copy.now))
        #expect(copy.daemon("status", #"{"target":"Notes"}"#, from: 1)?["result"]?["state"] == "stopping")
    }

    @Test func aProcessWhoseManifestIsGoneIsEnded() throws {
        let original = running()
        let copy = try restored(original, manifests: [])
        #expect(copy.signals.contains { $0.0 == 4107 && $0.1 == SIGTERM })
    }
}
