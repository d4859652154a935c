import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import MediatorDaemon

/// Activation on its own: no broker, no peers, no logger. Time and the
/// registry come in as arguments; what it decides comes back as actions,
/// read here through ``step(_:)``.
@Suite("ComponentActivation")
struct ComponentActivationTests {
    typealias Action = ComponentActivation.Action

    let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    static let grace = TimeAmount.milliseconds(500)

    func at(ms: Int64) -> NIODeadline { start + .milliseconds(ms) }

    static func manifest(
        _ target: String = "Notes", instances: Int = 1, start: Manifest.Start = .onDemand, priority: Int = 0,
        idle: Int = 0, restart: Manifest.RestartPolicy = .onFailure, restartLimit: Int = 5, startTimeout: Double = 10,
        unit: String? = nil
    ) -> Manifest {
        Manifest(
            file: "/m/\(target).json", target: target, actions: [ActionSpec(name: "add")],
            launch: unit.map { .unit($0) } ?? .exec(arguments: ["/bin/\(target.lowercased())"], environment: [:], workingDirectory: nil),
            mode: instances > 1 ? .pool : .exclusive, instances: instances, start: start, priority: priority,
            idleExitSeconds: idle, restart: restart, restartBackoffMs: 200, restartLimit: restartLimit,
            startTimeoutSeconds: startTimeout)
    }

    func activation(_ manifests: [Manifest]) -> ComponentActivation {
        var activation = ComponentActivation()
        _ = activation.loadManifests(manifests, now: start, registry: Registry())
        return activation
    }

    /// A registry where `target` is registered by `connection` (of pid `pid`).
    static func registry(
        _ target: String = "Notes", mode: Registry.Mode = .exclusive, connection: ConnectionID = 7, pid: Int32 = 4107
    ) -> Registry {
        var registry = Registry()
        _ = try? registry.register(
            target: target, actions: [ActionSpec(name: "add")], mode: mode, description: nil, connection: connection,
            credentials: PeerCredentials(pid: pid, uid: 1000, gid: 1000), peerName: nil)
        return registry
    }

    func call(_ id: Int64?, from caller: ConnectionID = 1, to target: String = "Notes", deadline: NIODeadline? = nil, bytes: Int = 10)
        -> ManagedComponent.HeldCall
    {
        var idBytes = ByteBuffer()
        if let id { idBytes.writeString("\(id)") }
        let request = Broker.RouteRequest(
            target: target, action: "add", params: nil, id: id.map { .int($0) }, idBytes: id == nil ? nil : idBytes,
            timeoutMs: nil, more: false, viaURL: false)
        return ManagedComponent.HeldCall(caller: caller, request: request, deadline: deadline, bytes: bytes)
    }

    func waiter(_ id: Int64, from connection: ConnectionID = 2) -> StartWaiter {
        var idBytes = ByteBuffer()
        idBytes.writeString("\(id)")
        return StartWaiter(connection: connection, id: .int(id), idBytes: idBytes)
    }

    /// The actions in words, so that a test compares the whole sequence.
    func step(_ actions: [Action]) -> [String] {
        actions.map { action in
            switch action {
            case .manifestsLoaded(let count): return "loaded \(count)"
            case .bootStarting(let target): return "boot \(target)"
            case .activated(let target): return "activated \(target)"
            case .spawn(let order): return "spawn \(order.target) #\(order.spawnID)"
            case .startUnit(let unit, let target): return "start unit \(unit) for \(target)"
            case .stopUnit(let unit): return "stop unit \(unit)"
            case .signal(let pid, let signal, let group): return "signal \(signal) to \(pid)\(group ? " group" : "")"
            case .stopping(let target, let reason): return "stopping \(target) \(reason)"
            case .processEnded(let target, let pid, let end): return "ended \(target) \(pid): \(end)"
            case .startFailed(let target, let failure): return "start failed \(target) \(failure.rawValue)"
            case .restartScheduled(let target): return "restart \(target)"
            case .gaveUp(let target, let failures): return "gave up \(target) after \(failures)"
            case .idleExit(let target): return "idle \(target)"
            case .startAnswered(let waiter, let target): return "start answered \(waiter.id.map { "\($0)" } ?? "-") \(target)"
            case .startRefused(let waiter, let error):
                return "start refused \(waiter.id.map { "\($0)" } ?? "-") \(error.code.rawValue)"
            case .heldFailed(let call, let error): return "failed \(call.request.id.map { "\($0)" } ?? "-") \(error.code.rawValue)"
            case .heldTimedOut(let call): return "timed out \(call.request.id.map { "\($0)" } ?? "-")"
            case .deliver(let call):
                return "deliver \(call.request.id.map { "\($0)" } ?? "-")" + (call.request.timeoutMs.map { " \($0) ms" } ?? "")
            case .bootComplete: return "boot complete"
            case .wakeUp(let deadline): return "wake up +\((deadline - start).nanoseconds / 1_000_000) ms"
            }
        }
    }

    // MARK: - Manifests and boot

    @Test func reloadKeepsRunningComponentsMarkedRemovedAndForgetsIdleOnes() {
        var activation = activation([Self.manifest("Notes"), Self.manifest("Mail")])
        _ = activation.hold(call(1), now: start, registry: Registry())
        activation.processStarted(spawnID: 1, pid: 4107)
        _ = activation.registered("Notes", pid: 4107, now: start)
        let actions = activation.loadManifests([Self.manifest("Calendar")], now: start, registry: Self.registry())
        #expect(step(actions).first == "loaded 1")
        #expect(activation.components["Mail"] == nil, "activatable and removed: forgotten at once")
        #expect(activation.components["Notes"]?.removed == true, "running: stopped once its calls finish")
        #expect(activation.components["Calendar"]?.state == .activatable)
    }

    @Test func bootGroupsStartByPriorityEachAfterThePreviousSettled() {
        var activation = activation([
            Self.manifest("B", start: .atBoot), Self.manifest("A", start: .atBoot), Self.manifest("C", start: .atBoot, priority: 1),
            Self.manifest("D"),
        ])
        #expect(
            step(activation.startBootComponents(now: start, registry: Registry())) == [
                "boot A", "activated A", "spawn A #1", "wake up +10000 ms", "boot B", "activated B", "spawn B #2", "wake up +10000 ms",
            ])
        activation.processStarted(spawnID: 1, pid: 101)
        #expect(step(activation.registered("A", pid: 101, now: at(ms: 5))).isEmpty)
        #expect(
            step(activation.settleRegistration("A", now: at(ms: 5), registry: Self.registry("A"))) == ["wake up +10000 ms"],
            "B has not settled: C waits")
        let failed = activation.processExited(spawnID: 2, end: .exited(1), now: at(ms: 6), registry: Self.registry("A"))
        #expect(step(failed).contains("boot C"), "B failed: the next group starts")
        #expect(step(failed).contains("spawn C #3"))
        #expect(activation.components["D"]?.state == .activatable, "on demand: not started at boot")
        #expect(!activation.bootDone)
        activation.processStarted(spawnID: 3, pid: 103)
        _ = activation.registered("C", pid: 103, now: at(ms: 7))
        #expect(step(activation.settleRegistration("C", now: at(ms: 7), registry: Self.registry("C"))).first == "boot complete")
        #expect(activation.bootDone)
    }

    @Test func withoutAtBootComponentsBootIsCompleteAtOnce() {
        var activation = activation([Self.manifest()])
        #expect(step(activation.startBootComponents(now: start, registry: Registry())) == ["boot complete"])
    }

    // MARK: - Starting

    @Test func aHeldCallStartsTheComponentOnceAndEachProcessHasItsOwnSpawnID() {
        var activation = activation([Self.manifest(instances: 3)])
        #expect(
            step(activation.hold(call(1), now: start, registry: Registry())) == [
                "activated Notes", "spawn Notes #1", "spawn Notes #2", "spawn Notes #3", "wake up +10000 ms", "wake up +10000 ms",
            ])
        #expect(step(activation.hold(call(2), now: at(ms: 1), registry: Registry())) == ["wake up +10000 ms"], "already starting")
        #expect(activation.components["Notes"]?.state == .starting)
        #expect(activation.components["Notes"]?.processes.map(\.spawnID) == [1, 2, 3])
        #expect(activation.heldCalls.calls(of: 1) == 2)
        #expect(activation.heldCalls.bytes(of: 1) == 20)
        activation.processStarted(spawnID: 2, pid: 202)
        #expect(activation.components["Notes"]?.processes.map(\.pid) == [nil, 202, nil])
    }

    @Test func aUnitComponentIsStartedThroughSystemdAndItsFailureFailsItsCalls() {
        var activation = activation([Self.manifest(unit: "notes.service")])
        #expect(
            step(activation.hold(call(1), now: start, registry: Registry())) == [
                "activated Notes", "start unit notes.service for Notes", "wake up +10000 ms", "wake up +10000 ms",
            ])
        #expect(
            step(activation.unitFailed(target: "Notes", reason: "no such unit", now: at(ms: 3), registry: Registry())) == [
                "start failed Notes unit_failed", "failed 1 activation_failed",
            ])
        #expect(activation.components["Notes"]?.lastExit == "unit could not be started: no such unit")
        #expect(activation.components["Notes"]?.state == .activatable)
        #expect(activation.heldCalls.isEmpty)
    }

    // MARK: - Registration

    @Test func registrationAnswersStartsThenDeliversHeldCallsInOrderWithTheTimeTheyHaveLeft() {
        var activation = activation([Self.manifest()])
        _ = activation.hold(call(1, deadline: at(ms: 3000)), now: start, registry: Registry())
        _ = activation.requestStart("Notes", waiter: waiter(9), now: start, registry: Registry())
        _ = activation.hold(call(2), now: start, registry: Registry())
        _ = activation.hold(call(nil), now: start, registry: Registry())
        activation.processStarted(spawnID: 1, pid: 4107)
        let actions = activation.registered("Notes", pid: 4107, now: at(ms: 1000))
        #expect(step(actions) == ["start answered 9 Notes", "deliver 1 2000 ms", "deliver 2", "deliver -"])
        #expect(activation.components["Notes"]?.state == .running)
        #expect(activation.components["Notes"]?.processes.first?.registered == true)
        #expect(activation.components["Notes"]?.runningSince == at(ms: 1000))
        #expect(activation.components["Notes"]?.held.isEmpty == true)
        #expect(activation.heldCalls.calls(of: 1) == 3, "a released call counts as held until it is forwarded")
        for case .deliver(let call) in actions { activation.forwarding(call) }
        #expect(activation.heldCalls.isEmpty)
        #expect(activation.startWaiters["Notes"] == nil)
    }

    @Test func aRegistrationOfAnUnmanagedTargetIsNoneOfActivationsBusiness() {
        var activation = activation([Self.manifest()])
        #expect(activation.registered("Other", pid: 1, now: start).isEmpty)
        #expect(activation.settleRegistration("Other", now: start, registry: Self.registry("Other")).isEmpty)
        #expect(activation.gone("Other", now: start, registry: Registry()).isEmpty)
    }

    // MARK: - Failures and restarts

    @Test func aComponentThatExitsBeforeRegisteringFailsItsCallsAndStartsAgainOnTheNextCall() {
        var activation = activation([Self.manifest()])
        _ = activation.hold(call(1), now: start, registry: Registry())
        _ = activation.requestStart("Notes", waiter: waiter(9), now: start, registry: Registry())
        activation.processStarted(spawnID: 1, pid: 4107)
        #expect(
            step(activation.processExited(spawnID: 1, end: .exited(3), now: at(ms: 50), registry: Registry())) == [
                "ended Notes 4107: exited with status 3", "start failed Notes exited", "start refused 9 activation_failed",
                "failed 1 activation_failed",
            ])
        #expect(activation.components["Notes"]?.state == .activatable, "not restarted by itself")
        #expect(activation.components["Notes"]?.consecutiveRestarts == 1)
        #expect(activation.heldCalls.isEmpty)
        #expect(step(activation.hold(call(2), now: at(ms: 60), registry: Registry())).contains("spawn Notes #2"))
    }

    @Test func aCrashingComponentIsRestartedWithADoublingBackoffThenGivenUp() {
        var activation = activation([Self.manifest(restartLimit: 2)])
        var now = start
        _ = activation.hold(call(1), now: now, registry: Registry())
        activation.processStarted(spawnID: 1, pid: 4107)
        _ = activation.registered("Notes", pid: 4107, now: now)
        for (spawnID, backoffMs) in [(1, Int64(200)), (2, 400)] {
            let exited = activation.processExited(spawnID: spawnID, end: .signaled(11), now: now, registry: Registry())
            #expect(step(exited).contains("restart Notes"))
            #expect(activation.components["Notes"]?.state == .starting)
            #expect(activation.components["Notes"]?.restartAt == now + .milliseconds(backoffMs))
            now = now + .milliseconds(backoffMs)
            #expect(step(activation.expire(now: now, registry: Registry(), stopGrace: Self.grace)).first == "spawn Notes #\(spawnID + 1)")
            activation.processStarted(spawnID: spawnID + 1, pid: 4108)
            _ = activation.registered("Notes", pid: 4108, now: now)
        }
        _ = activation.hold(call(5), now: now, registry: Registry())
        let last = activation.processExited(spawnID: 3, end: .signaled(11), now: now, registry: Registry())
        #expect(step(last) == ["ended Notes 4108: killed by signal 11", "failed 5 activation_failed", "gave up Notes after 3"])
        #expect(activation.components["Notes"]?.state == .failed)
        #expect(activation.components["Notes"]?.restarts == 2)
        let retried = activation.requestStart("Notes", waiter: waiter(9), now: now, registry: Registry())
        #expect(step(retried).prefix(2) == ["activated Notes", "spawn Notes #4"], "`start` tries a failed component again")
        #expect(activation.components["Notes"]?.consecutiveRestarts == 0)
    }

    // An adopted process the daemon is not the parent of (after `systemctl
    // restart`) ends with no exit status: clean only when it was asked to stop.
    @Test func anUnobservedEndAfterAStopRequestIsAStop() {
        var activation = activation([Self.manifest(idle: 5)])
        let registry = Self.registry()
        _ = activation.hold(call(1), now: start, registry: Registry())
        activation.processStarted(spawnID: 1, pid: 4107)
        _ = activation.registered("Notes", pid: 4107, now: start)
        _ = activation.expire(now: at(ms: 5000), registry: registry, stopGrace: Self.grace)
        #expect(activation.components["Notes"]?.state == .stopping)
        let ended = activation.processExited(spawnID: 1, end: .unobserved, now: at(ms: 5100), registry: Registry())
        #expect(!step(ended).contains { $0.hasPrefix("restart") })
        #expect(activation.components["Notes"]?.state == .activatable)
        #expect(activation.components["Notes"]?.consecutiveRestarts == 0)
    }

    @Test func anUnexplainedUnobservedEndCountsAsACrash() {
        var activation = activation([Self.manifest(instances: 2)])
        _ = activation.requestStart("Notes", waiter: waiter(9), now: start, registry: Registry())
        activation.processStarted(spawnID: 1, pid: 4107)
        activation.processStarted(spawnID: 2, pid: 4108)
        _ = activation.registered("Notes", pid: 4107, now: start)
        _ = activation.registered("Notes", pid: 4108, now: start)
        let registry = Self.registry(mode: .pool, pid: 4108)
        let ended = activation.processExited(spawnID: 1, end: .unobserved, now: at(ms: 100), registry: registry)
        #expect(step(ended).first == "ended Notes 4107: ended (no exit status: mediatord was not its parent)")
        #expect(step(ended).contains("restart Notes"), "a pool member is restarted")
        #expect(activation.components["Notes"]?.consecutiveRestarts == 1, "toward the restart limit")
    }

    @Test func aProcessThatRanAWhileResetsTheCountOfQuickRestarts() {
        var activation = activation([Self.manifest()])
        _ = activation.hold(call(1), now: start, registry: Registry())
        activation.processStarted(spawnID: 1, pid: 4107)
        _ = activation.registered("Notes", pid: 4107, now: start)
        _ = activation.processExited(spawnID: 1, end: .exited(1), now: at(ms: 100), registry: Registry())
        _ = activation.expire(now: at(ms: 300), registry: Registry(), stopGrace: Self.grace)
        activation.processStarted(spawnID: 2, pid: 4108)
        _ = activation.registered("Notes", pid: 4108, now: at(ms: 400))
        #expect(activation.components["Notes"]?.consecutiveRestarts == 1)
        let steady = at(ms: 300 + 10_000)  // ten seconds after it started
        _ = activation.processExited(spawnID: 2, end: .exited(1), now: steady, registry: Registry())
        #expect(activation.components["Notes"]?.consecutiveRestarts == 1, "reset to 0, then this failure")
        #expect(activation.components["Notes"]?.restartAt == steady + .milliseconds(200), "the backoff starts over")
    }

    @Test func aComponentThatNeverRegistersIsKilledAfterItsStartTimeout() {
        var activation = activation([Self.manifest(startTimeout: 1.5)])
        _ = activation.hold(call(1, deadline: at(ms: 60_000)), now: start, registry: Registry())
        activation.processStarted(spawnID: 1, pid: 4107)
        #expect(activation.nextWakeUp(now: start, registry: Registry()) == at(ms: 1500))
        #expect(activation.expire(now: at(ms: 1499), registry: Registry(), stopGrace: Self.grace).count == 1, "only the next wake-up")
        #expect(
            step(activation.expire(now: at(ms: 1500), registry: Registry(), stopGrace: Self.grace)) == [
                "start failed Notes start_timeout", "failed 1 activation_failed", "signal \(SIGKILL) to 4107 group",
            ])
        #expect(activation.components["Notes"]?.state == .stopping)
        #expect(activation.components["Notes"]?.lastExit == "did not register within 1.5 s")
        _ = activation.processExited(spawnID: 1, end: .signaled(SIGKILL), now: at(ms: 1510), registry: Registry())
        #expect(activation.components["Notes"]?.lastExit == "did not register within 1.5 s", "the daemon's reason stays")
        #expect(activation.components["Notes"]?.state == .activatable)
    }

    // MARK: - Stopping

    @Test func anIdleComponentIsAskedToStopThenTerminatedAfterTheGrace() {
        var activation = activation([Self.manifest(idle: 5)])
        let registry = Self.registry()
        _ = activation.hold(call(1), now: start, registry: Registry())
        activation.processStarted(spawnID: 1, pid: 4107)
        _ = activation.registered("Notes", pid: 4107, now: start)
        #expect(activation.idleDeadline("Notes", registry: registry) == at(ms: 5000))
        activation.noteActivity("Notes", now: at(ms: 1000))
        #expect(activation.nextWakeUp(now: at(ms: 1000), registry: registry) == at(ms: 6000))
        #expect(
            step(activation.expire(now: at(ms: 6000), registry: registry, stopGrace: Self.grace)) == [
                "idle Notes", "stopping Notes idle", "wake up +6500 ms", "wake up +6500 ms",
            ])
        #expect(activation.components["Notes"]?.state == .stopping)
        #expect(
            step(activation.expire(now: at(ms: 6500), registry: registry, stopGrace: Self.grace)) == [
                "signal \(SIGTERM) to 4107 group",
            ])
        _ = activation.processExited(spawnID: 1, end: .exited(0), now: at(ms: 6600), registry: Registry())
        #expect(activation.components["Notes"]?.state == .activatable)
    }

    @Test func aCallInFlightOrHeldKeepsAComponentFromIdling() {
        var activation = activation([Self.manifest(idle: 5)])
        var registry = Self.registry()
        _ = activation.hold(call(1), now: start, registry: Registry())
        _ = activation.registered("Notes", pid: 4107, now: start)
        registry.adjustInFlight(target: "Notes", instance: 1, by: 1)
        #expect(activation.idleDeadline("Notes", registry: registry) == nil)
        #expect(activation.idleDeadline("Notes", registry: Registry()) == nil, "not registered: not idle either")
    }

    @Test func aStopOfAComponentWithNoProcessNorInstanceSettlesAtOnce() {
        var activation = activation([Self.manifest()])
        _ = activation.registered("Notes", pid: 1, now: start)  // registered on its own: no process of ours
        #expect(step(activation.stop("Notes", reason: "requested", grace: Self.grace, now: start, registry: Registry())) == [
            "stopping Notes requested"
        ])
        #expect(activation.components["Notes"]?.state == .activatable)
        #expect(activation.components["Notes"]?.termAt == nil)
    }

    @Test func aSelfRegisteredInstanceIsSignalledAloneAndAUnitIsStopped() {
        var activation = activation([Self.manifest(), Self.manifest("Mail", unit: "mail.service")])
        _ = activation.hold(call(1), now: start, registry: Registry())
        activation.processStarted(spawnID: 1, pid: 4107)
        _ = activation.registered("Notes", pid: 4107, now: start)
        var registry = Self.registry(mode: .pool, pid: 4107)
        _ = try? registry.register(
            target: "Notes", actions: [ActionSpec(name: "add")], mode: .pool, description: nil, connection: 8,
            credentials: PeerCredentials(pid: 5000, uid: 1000, gid: 1000), peerName: nil)
        _ = activation.stop("Notes", reason: "requested", grace: Self.grace, now: start, registry: registry)
        _ = activation.hold(call(2, to: "Mail"), now: start, registry: registry)
        _ = activation.stop("Mail", reason: "requested", grace: Self.grace, now: start, registry: Self.registry("Mail"))
        let due = step(activation.expire(now: at(ms: 500), registry: registry, stopGrace: Self.grace))
        #expect(due.contains("stop unit mail.service"))
        #expect(due.contains("signal \(SIGTERM) to 4107 group"))
        #expect(due.contains("signal \(SIGTERM) to 5000"))
        #expect(activation.startedProcessIDs == [4107])
    }

    @Test func aRemovedComponentStopsOnceIdleAndItsLateCallsAreNotFound() {
        var activation = activation([Self.manifest()])
        _ = activation.hold(call(1), now: start, registry: Registry())
        activation.processStarted(spawnID: 1, pid: 4107)
        _ = activation.registered("Notes", pid: 4107, now: start)
        _ = activation.loadManifests([], now: start, registry: Self.registry())
        #expect(step(activation.expire(now: start, registry: Self.registry(), stopGrace: Self.grace)).prefix(1) == ["stopping Notes removed"])
        _ = activation.hold(call(2), now: start, registry: Self.registry())
        #expect(step(activation.gone("Notes", now: start, registry: Registry())).isEmpty, "its process will report its exit")
        let ended = activation.processExited(spawnID: 1, end: .exited(0), now: at(ms: 10), registry: Registry())
        #expect(step(ended).contains("failed 2 target_not_found"))
        #expect(activation.components["Notes"] == nil)
    }

    // MARK: - Held calls

    @Test func aHeldCallTimesOutOnItsOwnDeadline() {
        var activation = activation([Self.manifest()])
        _ = activation.hold(call(1, deadline: at(ms: 300)), now: start, registry: Registry())
        _ = activation.hold(call(2, deadline: at(ms: 900)), now: start, registry: Registry())
        #expect(activation.nextWakeUp(now: start, registry: Registry()) == at(ms: 300))
        #expect(
            step(activation.expire(now: at(ms: 300), registry: Registry(), stopGrace: Self.grace)) == [
                "timed out 1", "wake up +900 ms",
            ])
        #expect(activation.components["Notes"]?.held.map(\.request.id) == [.int(2)])
        #expect(activation.heldCalls.calls(of: 1) == 1)
    }

    @Test func cancelTakesAHeldCallOrAStartOutOfItsQueue() {
        var activation = activation([Self.manifest()])
        _ = activation.hold(call(1), now: start, registry: Registry())
        _ = activation.requestStart("Notes", waiter: waiter(4), now: start, registry: Registry())
        #expect(activation.cancel(caller: 1, id: .int(7)) == nil, "no such id")
        #expect(activation.cancel(caller: 3, id: .int(4)) == nil, "another connection's id")
        guard case .heldCall(let call)? = activation.cancel(caller: 1, id: .int(1)) else {
            Issue.record("the held call was not found")
            return
        }
        #expect(call.request.id == .int(1))
        guard case .startWaiter(let waiter)? = activation.cancel(caller: 2, id: .int(4)) else {
            Issue.record("the start was not found")
            return
        }
        #expect(waiter.connection == 2)
        #expect(activation.startWaiters["Notes"]?.isEmpty == true)
        #expect(activation.heldCalls.calls(of: 2) == 0)
    }

    @Test func aClosedConnectionTakesItsHeldCallsAndStartsWithIt() {
        var activation = activation([Self.manifest(), Self.manifest("Mail")])
        _ = activation.hold(call(1, from: 1), now: start, registry: Registry())
        _ = activation.hold(call(2, from: 2), now: start, registry: Registry())
        _ = activation.hold(call(3, from: 1, to: "Mail"), now: start, registry: Registry())
        _ = activation.requestStart("Notes", waiter: waiter(4, from: 1), now: start, registry: Registry())
        let dropped = activation.dropHeld(from: 1)
        #expect(Set(dropped.compactMap(\.request.id)) == [.int(1), .int(3)])
        #expect(activation.heldCalls.calls(of: 1) == 0)
        #expect(activation.heldCalls.target(caller: 1, id: .int(4)) == nil)
        #expect(activation.startWaiters["Notes"]?.isEmpty == true)
        #expect(activation.components["Notes"]?.held.map(\.caller) == [2])
        #expect(activation.heldCalls.calls(of: 2) == 1)
    }
}
