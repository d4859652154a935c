import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import MediatorDaemon

/// After a crash: the component processes the crashed daemon kept in the
/// fd store claim their components by registering again from their own
/// pid, and are supervised as if this daemon had started them; the rest
/// are ended after the bound. Driven without processes or sockets: the
/// host's part is the effects.
@Suite("Broker: adopting a crashed daemon's component processes")
struct ComponentAdoptionTests {
    /// `reregister_hold_ms` here; the bound is it plus ``Broker/adoptionMargin``.
    static let holdMs: Int64 = 1000
    static let boundMs = holdMs + Broker.adoptionMargin.nanoseconds / 1_000_000

    static func manifest(
        _ target: String = "Notes", mode: TargetMode? = nil, instances: Int = 1, start: Manifest.Start = .onDemand,
        idle: Int = 0, restart: Manifest.RestartPolicy = .onFailure
    ) -> Manifest {
        Manifest(
            file: "/m/\(target).json", target: target, actions: [ActionSpec(name: "add")],
            launch: .exec(arguments: ["/bin/\(target.lowercased())"], environment: [:], workingDirectory: nil),
            mode: mode ?? (instances > 1 ? .pool : .exclusive), instances: instances, start: start, idleExitSeconds: idle,
            restart: restart)
    }

    /// A daemon after a crash: `manifests` loaded, caller 1 connected, and
    /// the stored processes (spawn id, pid) offered for adoption. Pid
    /// 4100+c is connection c's (BrokerDriver.credentials).
    func crashed(_ manifests: [Manifest], stored: [(spawnID: Int, pid: Int32)]) -> BrokerDriver {
        let d = BrokerDriver {
            $0.reregisterHoldMs = Self.holdMs
            $0.componentStopGraceMs = 500
        }
        d.apply(d.broker.loadManifests(manifests, now: d.now))
        d.connect(1)
        d.apply(d.broker.announceReregister(reason: Broker.crashReason, now: d.now))
        d.apply(d.broker.awaitAdoption(of: stored, now: d.now))
        _ = d.take(1)
        return d
    }

    func status(_ d: BrokerDriver, _ target: String = "Notes") -> JSONValue? {
        d.daemon("status", #"{"target":"\#(target)"}"#, from: 1)?["result"]
    }

    /// Registers without emptying the inbox: the held calls released land there.
    func register(_ d: BrokerDriver, _ target: String = "Notes", mode: String = "exclusive", from connection: ConnectionID) {
        d.connect(connection)
        d.send(
            #"{"id":"reg","target":"mediator","action":"register","params":{"target":"\#(target)","actions":["add"],"mode":"\#(mode)"}}"#,
            from: connection)
    }

    @Test func aStoredProcessThatRegistersItsTargetIsItsComponentsRunningInstance() {
        let d = crashed([Self.manifest()], stored: [(spawnID: 5, pid: 4107)])
        // A call before it is back waits for it: no second instance is started.
        d.send(#"{"id":1,"target":"Notes","action":"add","params":{"n":1}}"#, from: 1)
        #expect(d.spawns.isEmpty)
        #expect(d.take(1).isEmpty)
        d.advance(ms: 300)
        register(d, from: 7)
        #expect(d.adoptedStored.map(\.spawnID) == [5])
        #expect(d.adoptedStored.map(\.pid) == [4107])
        #expect(d.adoptedStored.map(\.target) == ["Notes"])
        #expect(d.takeJSON(7).contains { $0["action"] == "add" && $0["params"] == ["n": 1] }, "the held call went out to it")
        let state = status(d)
        #expect(state?["state"] == "running")
        #expect(state?["pids"] == [4107])
        // Every stored process was claimed: the adoption is over, nothing is ended.
        #expect(d.broker.activation.adoption.deadline == nil)
        d.advance(ms: Self.boundMs)
        d.expire()
        #expect(d.endedStored.isEmpty)
        #expect(d.spawns.isEmpty)
    }

    @Test func newSpawnIDsGoAboveTheStoredOnes() {
        let d = crashed([Self.manifest(), Self.manifest("Mail")], stored: [(spawnID: 41, pid: 4107), (spawnID: 9, pid: 4108)])
        register(d, from: 7)
        register(d, "Mail", from: 8)
        d.disconnect(7)
        d.apply(d.broker.processExited(spawnID: 41, end: .unobserved, now: d.now))
        d.advance(ms: 200)
        d.expire()
        #expect(d.spawns.map(\.spawnID) == [42], "the replacement's id names no stored process")
    }

    @Test func aRegistrationFromAnotherPidClaimsNothing() {
        let d = crashed([Self.manifest()], stored: [(spawnID: 5, pid: 4999)])
        register(d, from: 7)
        #expect(d.adoptedStored.isEmpty)
        #expect(status(d)?["state"] == "running", "registered on its own, as before")
        #expect(status(d)?["pids"] == [])
        d.advance(ms: Self.boundMs)
        d.expire()
        #expect(d.endedStored == [5])
    }

    @Test func aTargetNoManifestDescribesClaimsNothing() {
        let d = crashed([Self.manifest()], stored: [(spawnID: 5, pid: 4107)])
        register(d, "Kv", from: 7)
        #expect(d.adoptedStored.isEmpty)
        d.advance(ms: Self.boundMs - 1)
        d.expire()
        #expect(d.endedStored.isEmpty, "it may still register a managed target")
        d.advance(ms: 1)
        d.expire()
        #expect(d.endedStored == [5])
    }

    @Test func aComponentWithAllItsProcessesClaimsNoMore() {
        // A pool of one: a second pool member registers, but the manifest has room for one process.
        let d = crashed([Self.manifest("Pool", mode: .pool)], stored: [(spawnID: 5, pid: 4107), (spawnID: 6, pid: 4108)])
        register(d, "Pool", mode: "pool", from: 7)
        register(d, "Pool", mode: "pool", from: 8)
        #expect(d.adoptedStored.map(\.spawnID) == [5])
        #expect(status(d, "Pool")?["pids"] == [4107])
        d.advance(ms: Self.boundMs)
        d.expire()
        #expect(d.endedStored == [6])
    }

    @Test func aPoolTakesBackEachOfItsStoredMembers() {
        let d = crashed([Self.manifest("Pool", instances: 2)], stored: [(spawnID: 5, pid: 4107), (spawnID: 6, pid: 4108)])
        register(d, "Pool", mode: "pool", from: 7)
        #expect(d.broker.activation.adoption.deadline != nil, "one member is still to come")
        register(d, "Pool", mode: "pool", from: 8)
        #expect(d.adoptedStored.map(\.spawnID) == [5, 6])
        #expect(status(d, "Pool")?["pids"] == [4107, 4108])
        #expect(d.broker.activation.adoption.deadline == nil)
    }

    @Test func unclaimedProcessesEndAfterTheBoundAndTheWaitingCallStartsTheComponent() {
        let d = crashed([Self.manifest()], stored: [(spawnID: 5, pid: 4107)])
        d.send(#"{"id":1,"target":"Notes","action":"add","timeout_ms":60000}"#, from: 1)
        #expect(d.broker.activation.adoption.deadline == d.at(ms: Self.boundMs))
        // The re-registration window's end comes first; the bound's wake-up is asked for then.
        d.advance(ms: Self.holdMs)
        d.expire()
        #expect(d.wakeUps.contains(d.at(ms: Self.boundMs)))
        d.advance(ms: Self.boundMs - Self.holdMs - 1)
        d.expire()
        #expect(d.endedStored.isEmpty)
        #expect(d.spawns.isEmpty, "its start waits while a stored process may still claim it")
        d.advance(ms: 1)
        d.expire()
        #expect(d.endedStored == [5])
        #expect(d.spawns.map(\.spawnID) == [6])
        d.apply(d.broker.processStarted(spawnID: 6, pid: 4109, now: d.now))
        register(d, from: 9)
        #expect(d.takeJSON(9).contains { $0["action"] == "add" }, "the call held meanwhile goes to the new one")
        #expect(d.take(1).isEmpty)
    }

    @Test func atBootComponentsStartOnlyIfNoStoredProcessClaimedThem() {
        let d = crashed(
            [Self.manifest("Notes", start: .atBoot), Self.manifest("Mail", start: .atBoot)], stored: [(spawnID: 5, pid: 4107)])
        d.apply(d.broker.startBootComponents(now: d.now))
        #expect(d.spawns.isEmpty)
        register(d, from: 7)
        #expect(d.adoptedStored.map(\.target) == ["Notes"])
        // The adoption is over: Mail, whose process nobody kept, starts now.
        #expect(d.spawns.map(\.target) == ["Mail"])
    }

    @Test func aClaimedProcessThatEndsIsRestartedByItsManifest() {
        let d = crashed([Self.manifest()], stored: [(spawnID: 5, pid: 4107)])
        register(d, from: 7)
        _ = d.take(7)
        d.disconnect(7)
        d.apply(d.broker.processExited(spawnID: 5, end: .unobserved, now: d.now))
        #expect(d.spawns.isEmpty, "after the backoff")
        d.advance(ms: 200)
        d.expire()
        #expect(d.spawns.map(\.target) == ["Notes"])
        let state = status(d)
        #expect(state?["restarts"] == 1)
        #expect(state?["last_exit"] == .string(ProcessEnd.unobserved.description))
    }

    @Test func aClaimedProcessThatEndsUnderRestartNoIsNotReplaced() {
        let d = crashed([Self.manifest(restart: .no)], stored: [(spawnID: 5, pid: 4107)])
        register(d, from: 7)
        d.disconnect(7)
        d.apply(d.broker.processExited(spawnID: 5, end: .unobserved, now: d.now))
        d.advance(ms: 10_000)
        d.expire()
        #expect(d.spawns.isEmpty)
        #expect(status(d)?["state"] == "activatable")
    }

    @Test func aClaimedProcessIsStoppedWhenIdle() {
        let d = crashed([Self.manifest(idle: 5)], stored: [(spawnID: 5, pid: 4107)])
        register(d, from: 7)
        _ = d.take(7)
        d.advance(ms: 5000)
        d.expire()
        #expect(d.takeJSON(7) == [["event": "mediator.stop", "data": ["target": "Notes", "reason": "idle"]]])
        d.advance(ms: 500)
        d.expire()
        #expect(d.signals.map(\.pid) == [4107])
        #expect(d.signals.first?.signal == SIGTERM)
    }

    @Test func theDaemonsStopSignalsClaimedProcessesLikeItsOwn() {
        let d = crashed([Self.manifest()], stored: [(spawnID: 5, pid: 4107)])
        register(d, from: 7)
        d.apply(d.broker.terminateStartedComponents())
        #expect(d.signals.map(\.pid) == [4107])
    }

    @Test func aUnitComponentStartsAtOnce() {
        // systemd runs its process: none of the stored ones can be it.
        var unit = Self.manifest("Mail")
        unit.launch = .unit("mail.service")
        let d = crashed([Self.manifest(), unit], stored: [(spawnID: 5, pid: 4107)])
        d.send(#"{"id":1,"target":"Mail","action":"add"}"#, from: 1)
        #expect(d.unitStarts == ["mail.service"])
        #expect(d.broker.activation.adoption.deadline != nil)
    }

    @Test func nothingStoredMeansNoAdoptionAndNoDeferredStarts() {
        let d = crashed([Self.manifest()], stored: [])
        #expect(d.broker.activation.adoption.deadline == nil)
        d.send(#"{"id":1,"target":"Notes","action":"add"}"#, from: 1)
        #expect(d.spawns.count == 1)
    }
}
