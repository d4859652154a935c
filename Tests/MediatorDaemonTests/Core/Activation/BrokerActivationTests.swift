import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import MediatorDaemon

/// Components started on demand, driven without processes: spawns are
/// effects, and the test reports starts and exits back as the host would.
@Suite("Broker: components started on demand")
struct BrokerActivationTests {
    static func manifest(
        _ target: String = "Notes", actions: [String] = ["add", "list"], instances: Int = 1, start: Manifest.Start = .onDemand,
        priority: Int = 0, idle: Int = 0, restartLimit: Int = 5, startTimeout: Double = 10
    ) -> Manifest {
        Manifest(
            file: "/m/\(target).json", target: target, actions: actions.map { ActionSpec(name: $0) },
            launch: .exec(arguments: ["/bin/\(target.lowercased())"], environment: [:], workingDirectory: nil),
            mode: instances > 1 ? .pool : .exclusive, instances: instances, start: start, priority: priority,
            idleExitSeconds: idle, restartLimit: restartLimit, startTimeoutSeconds: startTimeout)
    }

    func driver(_ manifests: [Manifest]) -> BrokerDriver {
        let d = BrokerDriver { $0.componentStopGraceMs = 500 }
        d.apply(d.broker.loadManifests(manifests, now: d.now))
        return d
    }

    /// Registers without emptying the component's inbox (the held calls
    /// released by the registration land there).
    func register(_ d: BrokerDriver, _ target: String, mode: String = "exclusive", from connection: ConnectionID) {
        d.send(
            #"{"id":"reg","target":"mediator","action":"register","params":{"target":"\#(target)","actions":["add","list"],"mode":"\#(mode)"}}"#,
            from: connection)
    }

    /// The component process `connection` stands for has started (pid 4100+connection).
    func started(_ d: BrokerDriver, spawn index: Int, as connection: ConnectionID) {
        d.apply(d.broker.processStarted(spawnID: d.spawns[index].spawnID, pid: 4100 + Int32(connection), now: d.now))
        d.connect(connection)
    }

    @Test func heldCallsGoOutInOrderOnceTheComponentRegisters() {
        let d = driver([Self.manifest()])
        d.connect(1)
        for n in 1...50 { d.send(#"{"id":\#(n),"target":"Notes","action":"add","params":{"n":\#(n)}}"#, from: 1) }
        #expect(d.spawns.count == 1, "one start for all the held calls")
        #expect(d.spawns.first?.arguments == ["/bin/notes"])
        #expect(d.take(1).isEmpty, "held, not answered")
        started(d, spawn: 0, as: 7)
        register(d, "Notes", from: 7)
        let forwarded = d.takeJSON(7).filter { $0["action"] == "add" }
        #expect(forwarded.map { $0["params"]?["n"]?.intValue } == (1...50).map { Int64($0) })
    }

    @Test func startOrStopOfASelfRegisteredTargetSaysItIsNotManaged() {
        let d = driver([Self.manifest()])
        d.connect(1, credentials: PeerCredentials(pid: 1, uid: 0, gid: 0))
        d.connect(2)
        d.register("Kv", from: 2)
        for action in ["start", "stop"] {
            let answer = d.daemon(action, #"{"target":"Kv"}"#, from: 1)
            #expect(errorCode(answer) == "forbidden", "\(action): \(String(describing: answer))")
            #expect(answer?["error"]?["message"]
                == #"target "Kv" is running but not managed by the daemon: it registered itself and no manifest describes it"#)
            let nobody = d.daemon(action, #"{"target":"Nobody"}"#, from: 1)
            #expect(errorCode(nobody) == "target_not_found", "\(action): \(String(describing: nobody))")
        }
        #expect(d.spawns.isEmpty)
        #expect(d.broker.registry.target("Kv") != nil, "still registered")
    }

    @Test func anUndeclaredActionFailsAtOnceWithoutStartingAnything() {
        let d = driver([Self.manifest()])
        d.connect(1)
        d.send(#"{"id":1,"target":"Notes","action":"nope"}"#, from: 1)
        #expect(d.takeOne(1)?["error"]?["code"] == "action_not_found")
        #expect(d.spawns.isEmpty)
    }

    @Test func aProcessThatExitsBeforeRegisteringFailsTheHeldCallsWithItsStatus() {
        let d = driver([Self.manifest()])
        d.connect(1)
        d.send(#"{"id":1,"target":"Notes","action":"add"}"#, from: 1)
        d.apply(d.broker.processExited(spawnID: d.spawns[0].spawnID, end: .exited(3), now: d.now))
        let answer = d.takeOne(1)
        #expect(answer?["error"]?["code"] == "activation_failed")
        #expect(answer?["error"]?["message"] == #""Notes" exited with status 3 before it registered"#)
        // Never forwarded: a retry is safe.
        #expect(answer?["error"]?["data"] == ["delivered": false])
        // The next call tries again.
        d.send(#"{"id":2,"target":"Notes","action":"add"}"#, from: 1)
        #expect(d.spawns.count == 2)
    }

    @Test func noRegistrationWithinTheStartTimeoutFailsTheCallsAndKillsTheProcess() {
        let d = driver([Self.manifest(startTimeout: 1)])
        d.connect(1)
        d.send(#"{"id":1,"target":"Notes","action":"add","timeout_ms":60000}"#, from: 1)
        d.apply(d.broker.processStarted(spawnID: d.spawns[0].spawnID, pid: 999, now: d.now))
        d.advance(ms: 999)
        d.expire()
        #expect(d.take(1).isEmpty)
        d.advance(ms: 1)
        d.expire()
        #expect(d.takeOne(1)?["error"]?["message"] == #""Notes" did not register within 1 s"#)
        #expect(d.signals.map(\.pid) == [999])
        #expect(d.signals.first?.signal == SIGKILL)
    }

    @Test func aHeldCallTimesOutOnItsOwnTimeout() {
        let d = driver([Self.manifest()])
        d.connect(1)
        d.send(#"{"id":1,"target":"Notes","action":"add","timeout_ms":200}"#, from: 1)
        d.advance(ms: 200)
        d.expire()
        let answer = d.takeOne(1)
        #expect(answer?["error"]?["code"] == "timeout")
        // Unlike a call in flight, a held one never reached the component.
        #expect(answer?["error"]?["data"] == ["delivered": false])
    }

    @Test func heldCallsCountAgainstTheCallsInFlightLimit() {
        let d = BrokerDriver { $0.maxCallsInFlightPerConnection = 2 }
        d.apply(d.broker.loadManifests([Self.manifest()], now: d.now))
        d.connect(1)
        for n in 1...3 { d.send(#"{"id":\#(n),"target":"Notes","action":"add"}"#, from: 1) }
        #expect(d.takeOne(1)?["error"]?["code"] == "overloaded")
    }

    @Test func idleExitSendsStopThenSigtermThenStartsAgainOnTheNextCall() {
        let d = driver([Self.manifest(idle: 5)])
        d.connect(1)
        d.send(#"{"id":1,"target":"Notes","action":"add"}"#, from: 1)
        started(d, spawn: 0, as: 7)
        register(d, "Notes", from: 7)
        let request = d.takeJSON(7).first { $0["action"] == "add" }
        d.send(#"{"id":\#(request?["id"]?.intValue ?? 0),"result":{}}"#, from: 7)
        _ = d.take(1)
        d.advance(ms: 4999)
        d.expire()
        #expect(d.take(7).isEmpty)
        d.advance(ms: 1)
        d.expire()
        #expect(d.takeJSON(7) == [["event": "mediator.stop", "data": ["target": "Notes", "reason": "idle"]]])
        d.advance(ms: 500)
        d.expire()
        #expect(d.signals.map(\.pid) == [4107])
        #expect(d.signals.first?.signal == SIGTERM)
        d.disconnect(7)
        d.apply(d.broker.processExited(spawnID: d.spawns[0].spawnID, end: .exited(0), now: d.now))
        #expect(d.spawns.count == 1, "a clean idle exit is not restarted")
        d.send(#"{"id":2,"target":"Notes","action":"list"}"#, from: 1)
        #expect(d.spawns.count == 2, "the next call starts it again")
    }

    @Test func aPoolStartsItsInstancesAndReplacesACrashedOneAfterTheBackoff() {
        let d = driver([Self.manifest("Pool", instances: 3)])
        d.connect(1)
        d.send(#"{"id":1,"target":"Pool","action":"add"}"#, from: 1)
        #expect(d.spawns.count == 3)
        for (index, connection) in [10, 11, 12].enumerated() {
            started(d, spawn: index, as: connection)
            d.register("Pool", actions: #"["add","list"]"#, mode: "pool", from: connection)
        }
        d.disconnect(11)
        d.apply(d.broker.processExited(spawnID: d.spawns[1].spawnID, end: .signaled(9), now: d.now))
        #expect(d.spawns.count == 3, "replaced only after the backoff")
        d.advance(ms: 200)
        d.expire()
        #expect(d.spawns.count == 4)
        let status = d.daemon("status", #"{"target":"Pool"}"#, from: 1)
        #expect(status?["result"]?["restarts"] == 1)
        #expect(status?["result"]?["last_exit"] == "killed by signal 9")
        #expect(status?["result"]?["state"] == "running")
    }

    /// Found while writing the chaos run (Tests/Chaos), which stops pools
    /// mid-restart: a stop while a crashed instance waited for its backoff
    /// let that restart happen after the stop.
    @Test func aStopCancelsARestartThatIsWaitingForItsBackoff() {
        let d = driver([Self.manifest("Pool", instances: 2)])
        d.connect(1, credentials: PeerCredentials(pid: 4101, uid: 0, gid: 0))
        d.send(#"{"id":1,"target":"Pool","action":"add"}"#, from: 1)
        for (index, connection) in [10, 11].enumerated() {
            started(d, spawn: index, as: connection)
            d.register("Pool", actions: #"["add","list"]"#, mode: "pool", from: connection)
        }
        d.disconnect(11)
        d.apply(d.broker.processExited(spawnID: d.spawns[1].spawnID, end: .signaled(9), now: d.now))
        _ = d.take(1)
        #expect(d.daemon("stop", #"{"target":"Pool"}"#, from: 1)?["result"]?["state"] == "stopping")
        d.disconnect(10)
        d.apply(d.broker.processExited(spawnID: d.spawns[0].spawnID, end: .exited(0), now: d.now))
        _ = d.take(1)
        #expect(d.daemon("status", #"{"target":"Pool"}"#, from: 1)?["result"]?["state"] == "activatable")
        d.advance(ms: 10_000)
        d.expire()
        #expect(d.spawns.count == 2, "a stopped component is not restarted")
        #expect(d.daemon("status", #"{"target":"Pool"}"#, from: 1)?["result"]?["state"] == "activatable")
    }

    @Test func afterTheRestartLimitTheComponentIsFailedUntilStartedByHand() {
        let d = driver([Self.manifest(restartLimit: 1)])
        d.connect(1)
        d.send(#"{"id":1,"target":"Notes","action":"add"}"#, from: 1)
        started(d, spawn: 0, as: 7)
        register(d, "Notes", from: 7)
        _ = d.take(7)
        d.disconnect(7)
        d.apply(d.broker.processExited(spawnID: d.spawns[0].spawnID, end: .exited(1), now: d.now))
        d.advance(ms: 200)
        d.expire()
        #expect(d.spawns.count == 2, "one restart allowed")
        d.apply(d.broker.processExited(spawnID: d.spawns[1].spawnID, end: .exited(1), now: d.now))
        _ = d.take(1)
        let listed = d.daemon("list", from: 1)?["result"]?["targets"]?.arrayValue?.first
        #expect(listed?["state"] == "failed")
        d.send(#"{"id":5,"target":"Notes","action":"add"}"#, from: 1)
        #expect(d.takeJSON(1).last?["error"]?["code"] == "activation_failed")
        d.send(#"{"id":6,"target":"mediator","action":"start","params":{"target":"Notes"}}"#, from: 1)
        #expect(d.spawns.count == 3, "start retries a failed component")
    }

    @Test func atBootComponentsStartByPriorityGroup() {
        let d = driver([
            Self.manifest("Late", start: .atBoot, priority: 20), Self.manifest("Early", start: .atBoot, priority: 0),
            Self.manifest("Middle", start: .atBoot, priority: 10), Self.manifest("Lazy"),
        ])
        d.apply(d.broker.startBootComponents(now: d.now))
        #expect(d.spawns.map(\.target) == ["Early"])
        started(d, spawn: 0, as: 20)
        d.register("Early", actions: #"["add","list"]"#, from: 20)
        #expect(d.spawns.map(\.target) == ["Early", "Middle"])
        d.apply(d.broker.processExited(spawnID: d.spawns[1].spawnID, end: .exited(2), now: d.now))
        #expect(d.spawns.map(\.target) == ["Early", "Middle", "Late"], "a failed group does not block the next")
        #expect(!d.bootCompleted)
        started(d, spawn: 2, as: 22)
        d.register("Late", actions: #"["add","list"]"#, from: 22)
        #expect(d.bootCompleted)
    }

    @Test func reloadAddsAndRemovesManifests() {
        let d = driver([Self.manifest("Old"), Self.manifest("Kept")])
        d.connect(1)
        d.apply(d.broker.loadManifests([Self.manifest("Kept"), Self.manifest("New")], now: d.now))
        let names = d.daemon("list", from: 1)?["result"]?["targets"]?.arrayValue?.compactMap { $0["target"]?.stringValue }
        #expect(names == ["Kept", "New"])
        #expect(d.daemon("describe", #"{"target":"New"}"#, from: 1)?["result"]?["state"] == "activatable")
    }

    @Test func aRemovedManifestOfARunningComponentStopsItOnceIdle() {
        let d = driver([Self.manifest("Old")])
        d.connect(1)
        d.send(#"{"id":1,"target":"Old","action":"add"}"#, from: 1)
        started(d, spawn: 0, as: 7)
        register(d, "Old", from: 7)
        let request = d.takeJSON(7).first { $0["action"] == "add" }
        d.apply(d.broker.loadManifests([], now: d.now))
        d.expire()
        #expect(d.take(7).isEmpty, "not while its call is in flight")
        d.send(#"{"id":\#(request?["id"]?.intValue ?? 0),"result":{}}"#, from: 7)
        d.expire()
        #expect(d.takeJSON(7) == [["event": "mediator.stop", "data": ["target": "Old", "reason": "removed"]]])
    }
}
