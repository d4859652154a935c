import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// Components started by the daemon from manifests (contract section 4,
    /// step 5): on demand, at boot, pools, idle exit, restarts, reload.
    ///
    /// The components are the Python Notes example, small shell scripts, and
    /// `sequencer.py` (below), a single-threaded component that answers calls
    /// strictly in arrival order and writes what happens to it into a log file,
    /// so that order and timing are seen from the component's side.
    @Suite("Activation")
    struct ActivationTests {
        // MARK: - On demand

        @Test(
            "Run as root, the daemon starts a component as the manifest's user, with that user's group only",
            .enabled(if: getuid() == 0, "changing users needs root"))
        func startsAsTheManifestsUser() throws {
            let world = try World()
            defer { world.close() }
            // The unprivileged user must reach the socket in the test's folder.
            chmod(world.directory.path, 0o755)
            let folder = try ComponentsFolder(world)
            _ = try folder.write("nobody.json", [
                "target": "AsNobody", "actions": ["whoami", "echo"], "user": "nobody",
                "exec": ["/usr/bin/python3", .string(Paths.notesComponent)],
            ])
            let daemon = try world.daemon(["--components", folder.path])
            let caller = try world.peer(daemon)
            let pid = try caller.result("AsNobody", "whoami", within: .seconds(15))["pid"]
            let instance = try #require(try daemon.listing("AsNobody")?["instances"]?.arrayValue?.first)
            #expect(instance["pid"] == pid)
            #expect(instance["uid"] == 65534, "\(instance.jsonText)")
            #expect(instance["gid"] == 65534, "\(instance.jsonText)")
            // Still in a process group of its own, so that stop signals reach its children.
            let stat = try String(contentsOfFile: "/proc/\(pid?.intValue ?? 0)/stat", encoding: .utf8)
            let fields = stat[(stat.lastIndex(of: ")") ?? stat.startIndex)...].split(separator: " ")
            #expect(fields.count > 3 && Int64(fields[3]) == pid?.intValue, "process group: \(stat)")
        }

        @Test("A call to an unregistered known target starts it; 50 pipelined calls are held, then delivered in order")
        func onDemandHoldsAndDeliversInOrder() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let log = ComponentLog(world.directory.file("seq.log"))
            let gate = world.directory.file("gate")
            let file = try folder.write(
                "seq.json", folder.sequencer("Seq", log: log, environment: ["COMPONENT_GATE": gate]))
            let daemon = try world.daemon(["--components", folder.path])
            let observer = try world.peer(daemon)

            // Known from the manifest, nothing started yet.
            let before = try #require(try daemon.listing("Seq"), "Seq not listed\(daemon.process.logTail())")
            #expect(before["state"] == "activatable", "\(before.jsonText)")
            #expect(before["activation"] == "exec", "\(before.jsonText)")
            #expect(before["instances"] == [], "\(before.jsonText)")
            #expect(before["actions"] == ["seq", "whoami", "sleep", "wait", "quit"], "\(before.jsonText)")
            #expect(log.lines.isEmpty, "started before any call: \(log.text)")

            let caller = try world.peer(daemon)
            var ids: [JSONValue] = []
            for n in 1...50 {
                ids.append(try caller.request("Seq", "seq", params: ["n": .int(Int64(n))], id: .string("call-\(n)")))
            }
            // The component waits for the gate before it registers: every call is held meanwhile.
            try waitUntil("the 50 calls to be held\(daemon.process.logTail())", within: .seconds(20)) {
                let status = try Self.status(observer, "Seq")
                // (The pid shows once the process has been spawned.)
                return status["state"] == "starting" && status["held_calls"] == 50
                    && status["pids"]?.arrayValue?.count == 1
            }
            let starting = try Self.status(observer, "Seq")
            #expect(starting["manifest"]?.stringValue == file, "\(starting.jsonText)")
            #expect(FileManager.default.createFile(atPath: gate, contents: nil))

            var replies: [JSONValue: JSONValue] = [:]
            for _ in 1...50 {
                let reply = try caller.receive(within: .seconds(20)) { $0.isResponse }
                let id = try #require(reply["id"])
                #expect(replies[id] == nil, "two replies to \(id.jsonText)")
                replies[id] = reply
            }
            let pid = try #require(starting["pids"]?.arrayValue?.first?.intValue)
            for (index, id) in ids.enumerated() {
                let reply = try #require(replies[id], "no reply to \(id.jsonText)")
                // The component numbers the calls as it receives them: the n-th request must be call n.
                #expect(reply["result"]?["seq"] == .int(Int64(index + 1)), "\(reply.jsonText)")
                #expect(reply["result"]?["params"] == ["n": .int(Int64(index + 1))], "\(reply.jsonText)")
                #expect(reply["result"]?["pid"]?.intValue == pid, "\(reply.jsonText)")
            }
            try caller.expectNothingPendingBeforePing()

            #expect(log.lines.filter { $0.word == "started" }.count == 1, "started more than once: \(log.text)")
            let running = try Self.status(observer, "Seq")
            #expect(running["state"] == "running", "\(running.jsonText)")
            #expect(running["calls_served"] == 50, "\(running.jsonText)")
            #expect(running["held_calls"] == 0, "\(running.jsonText)")
            #expect(running["restarts"] == 0, "\(running.jsonText)")
            #expect(running["uptime_s"]?.doubleValue.map { $0 >= 0 } == true, "\(running.jsonText)")
            #expect(running["instances"]?.arrayValue?.first?["pid"]?.intValue == pid, "\(running.jsonText)")
            // The process got its target and socket from the environment.
            #expect(log.lines.contains { $0.word == "registered" && $0.target == "Seq" }, "\(log.text)")

            // A call now goes straight through.
            #expect(try caller.result("Seq", "seq")["seq"] == 51)
        }

        @Test("A component that exits before it registers: held calls get activation_failed naming the exit status")
        func exitBeforeRegistering() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let starts = world.directory.file("starts")
            let script = try folder.script("crash.sh", """
                #!/bin/sh
                echo started >> "$STARTS"
                echo "crash: cannot go on" >&2
                exit 3
                """)
            try folder.write("crash.json", [
                "target": "Crash", "actions": ["x"], "exec": .array([.string(script)]),
                "environment": ["STARTS": .string(starts)], "restart_limit": 1,
            ])
            let daemon = try world.daemon(["--components", folder.path])
            let peer = try world.peer(daemon)
            let startCount = { ChildProcess.lines(ChildProcess.read(starts)).count }

            let expected = #""Crash" exited with status 3 before it registered"#
            let ids = try (1...3).map { n in try peer.request("Crash", "x", params: ["n": .int(Int64(n))]) }
            for id in ids {
                let reply = try peer.response(to: id, within: .seconds(15))
                #expect(reply.errorCode == "activation_failed", "\(reply.jsonText)")
                #expect(reply["error"]?["message"]?.stringValue?.contains(expected) == true, "\(reply.jsonText)")
            }
            try peer.expectNothingPendingBeforePing()
            #expect(startCount() == 1, "one start for the three held calls")
            let failed = try Self.status(peer, "Crash")
            #expect(failed["state"] == "activatable", "\(failed.jsonText)")
            #expect(failed["last_exit"] == "exited with status 3", "\(failed.jsonText)")
            #expect(failed["pids"] == [], "\(failed.jsonText)")
            // The component's stderr is in the daemon's log.
            try waitUntil("the component's stderr in the daemon's log\(daemon.process.logTail())") {
                daemon.process.stderr.contains("crash: cannot go on")
            }

            // The next call tries again; with restart_limit 1 the second failure in a row gives up.
            let again = try peer.call("Crash", "x", within: .seconds(15))
            #expect(again.errorCode == "activation_failed", "\(again.jsonText)")
            #expect(again["error"]?["message"]?.stringValue?.contains(expected) == true, "\(again.jsonText)")
            #expect(startCount() == 2)
            let givenUp = try Self.status(peer, "Crash")
            #expect(givenUp["state"] == "failed", "\(givenUp.jsonText)")

            // Failed: answered at once, and nothing is started.
            let refused = try peer.call("Crash", "x")
            #expect(refused.errorCode == "activation_failed", "\(refused.jsonText)")
            #expect(refused["error"]?["message"]?.stringValue?.contains("not started again") == true, "\(refused.jsonText)")
            let still = try Self.status(peer, "Crash")
            #expect(still["state"] == "failed" && still["pids"] == [], "\(still.jsonText)")

            // mediator/start retries a failed component (and reports why it failed again).
            let retried = try peer.call("mediator", "start", params: ["target": "Crash"], within: .seconds(15))
            #expect(retried.errorCode == "activation_failed", "\(retried.jsonText)")
            #expect(retried["error"]?["message"]?.stringValue?.contains(expected) == true, "\(retried.jsonText)")
            #expect(startCount() == 3)
        }

        @Test("A component that never registers: activation_failed after start_timeout_s, and it is killed")
        func neverRegisters() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let pids = world.directory.file("pids")
            // The shell forks `sleep` (no exec): a second process in the component's process group.
            let script = try folder.script("never.sh", """
                #!/bin/sh
                echo $$ >> "$PIDS"
                sleep 30
                echo "not killed" >&2
                """)
            try folder.write("never.json", [
                "target": "Never", "actions": ["x"], "exec": .array([.string(script)]),
                "environment": ["PIDS": .string(pids)], "start_timeout_s": 1,
            ])
            let daemon = try world.daemon(["--components", folder.path])
            let started = { ChildProcess.lines(ChildProcess.read(pids)).compactMap { pid_t($0) } }
            defer {
                // The component's process groups (the script is their leader) are ours to clean up.
                for pid in started() { Glibc.kill(-pid, SIGKILL) }
            }
            let peer = try world.peer(daemon)

            let begin = ContinuousClock.now
            let short = try peer.request("Never", "x", timeoutMs: 300)
            let long = try peer.request("Never", "x")
            // A held call's own timeout still applies.
            let shortReply = try peer.response(to: short, within: .seconds(10))
            #expect(shortReply.errorCode == "timeout", "\(shortReply.jsonText)")
            let longReply = try peer.response(to: long, within: .seconds(10))
            let elapsed = ContinuousClock.now - begin
            #expect(longReply.errorCode == "activation_failed", "\(longReply.jsonText)")
            #expect(
                longReply["error"]?["message"]?.stringValue?.contains(#""Never" did not register within 1 s"#) == true,
                "\(longReply.jsonText)")
            #expect(elapsed >= .milliseconds(950) && elapsed < .seconds(5), "\(elapsed)")

            let first = try #require(started().first, "the script did not start")
            try waitUntil("the component process to be gone") { Glibc.kill(first, 0) != 0 && errno == ESRCH }
            // Everything the component started goes with it (it runs in a process group of its own).
            // (Recorded, not thrown: the rest of the test still runs.)
            do {
                try waitUntil("the component's process group (the script's `sleep`) to be gone too", within: .seconds(5)) {
                    Glibc.kill(-first, 0) != 0 && errno == ESRCH
                }
            } catch {
                Issue.record("SIGKILL after the start timeout left the component's children running: \(error)")
            }
            try waitUntil("Never to be activatable again") { try Self.status(peer, "Never")["state"] == "activatable" }
            let status = try Self.status(peer, "Never")
            #expect(status["pids"] == [], "\(status.jsonText)")
            #expect(status["last_exit"] != nil, "\(status.jsonText)")

            // The next call starts it again (and fails the same way).
            let again = try peer.call("Never", "x", within: .seconds(10))
            #expect(again.errorCode == "activation_failed", "\(again.jsonText)")
            #expect(started().count == 2)
        }

        // MARK: - Idle exit

        @Test("idle_exit_s: an idle component is stopped; the next call starts a new process")
        func idleExitThenReactivation() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            try folder.write("notes.json", folder.notes("IdleNotes", ["idle_exit_s": 1]))
            let daemon = try world.daemon(["--components", folder.path, "--component-stop-grace-ms", "500"])
            let peer = try world.peer(daemon)

            let first = try #require(try peer.result("IdleNotes", "whoami", within: .seconds(20))["pid"]?.intValue)
            #expect(try peer.result("IdleNotes", "add", params: ["text": "kept in memory"])["id"] == 1)
            let running = try Self.status(peer, "IdleNotes")
            #expect(running["state"] == "running" && running["pids"] == [.int(first)], "\(running.jsonText)")

            try waitUntil("IdleNotes to stop after 1 s idle\(daemon.process.logTail())", within: .seconds(10)) {
                try Self.status(peer, "IdleNotes")["state"] == "activatable"
            }
            try waitUntil("the first Notes process to be gone") { Glibc.kill(pid_t(first), 0) != 0 && errno == ESRCH }
            let stopped = try Self.status(peer, "IdleNotes")
            #expect(stopped["pids"] == [] && stopped["instances"] == [], "\(stopped.jsonText)")
            #expect(stopped["last_exit"] == "exited with status 0", "\(stopped.jsonText)")
            #expect(stopped["restarts"] == 0, "an idle stop is not a restart: \(stopped.jsonText)")
            #expect(stopped["uptime_s"] == nil, "\(stopped.jsonText)")

            // Started again by the next call: a new process with empty notes.
            let second = try #require(try peer.result("IdleNotes", "whoami", within: .seconds(20))["pid"]?.intValue)
            #expect(second != first)
            #expect(try peer.result("IdleNotes", "list")["notes"] == [])
            #expect(try Self.status(peer, "IdleNotes")["calls_served"] == 4)
        }

        @Test("Idle stop sends mediator.stop {target, reason: idle}, then SIGTERM after --component-stop-grace-ms")
        func idleStopEventThenSIGTERM() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let log = ComponentLog(world.directory.file("lazy.log"))
            try folder.write(
                "lazy.json",
                folder.sequencer("Lazy", log: log, environment: ["COMPONENT_IGNORE_STOP": "1"], members: ["idle_exit_s": 1]))
            let daemon = try world.daemon(["--components", folder.path, "--component-stop-grace-ms", "500"])
            let peer = try world.peer(daemon)

            #expect(try peer.result("Lazy", "seq", within: .seconds(20))["seq"] == 1)
            try waitUntil("Lazy to get SIGTERM\(daemon.process.logTail())", within: .seconds(10)) {
                log.lines.contains { $0.word == "sigterm" }
            }
            let served = try #require(log.lines.last { $0.word == "served" })
            let stop = try #require(log.lines.first { $0.word == "stop" }, "no mediator.stop: \(log.text)")
            let term = try #require(log.lines.first { $0.word == "sigterm" })
            #expect(try JSONValue.parse(stop.rest) == ["reason": "idle", "target": "Lazy"], "\(stop.rest)")
            #expect(stop.time - served.time >= 0.95, "stopped \(stop.time - served.time) s after its last call")
            #expect(stop.time - served.time < 5, "stopped \(stop.time - served.time) s after its last call")
            #expect(term.time - stop.time >= 0.45, "SIGTERM \(term.time - stop.time) s after mediator.stop")
            #expect(term.time - stop.time < 5, "SIGTERM \(term.time - stop.time) s after mediator.stop")

            try waitUntil("Lazy to be activatable") { try Self.status(peer, "Lazy")["state"] == "activatable" }
            #expect(try Self.status(peer, "Lazy")["last_exit"] == "exited with status 0")
            // Again on demand.
            #expect(try peer.result("Lazy", "seq", within: .seconds(20))["seq"] == 1)
            #expect(log.lines.filter { $0.word == "started" }.count == 2, "\(log.text)")
        }

        // MARK: - Pools

        @Test("A pool of 3: a killed instance is replaced under load; only its calls in flight fail")
        func poolReplacesKilledInstance() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            try folder.write(
                "pool.json",
                folder.notes("Pool", ["mode": "pool", "instances": 3, "restart_backoff_ms": 100], extraArguments: ["--mode", "pool"]))
            let daemon = try world.daemon(["--components", folder.path])
            let control = try world.peer(daemon)

            _ = try control.result("Pool", "whoami", within: .seconds(20))
            try waitUntil("3 Pool instances\(daemon.process.logTail())", within: .seconds(20)) {
                try daemon.listing("Pool")?["instances"]?.arrayValue?.count == 3
            }
            let before = try Self.status(control, "Pool")
            let pidsBefore = Set(before["pids"]?.arrayValue?.compactMap(\.intValue) ?? [])
            let instancePids = Set(before["instances"]?.arrayValue?.compactMap { $0["pid"]?.intValue } ?? [])
            #expect(pidsBefore.count == 3 && pidsBefore == instancePids, "\(before.jsonText)")
            #expect(before["restarts"] == 0 && before["state"] == "running", "\(before.jsonText)")
            let victim = try #require(before["instances"]?.arrayValue?[1]["pid"]?.intValue)

            let callers = 4
            let load = Load(callers: callers)
            let outcomes = try onThreads(callers + 1, within: .seconds(120)) { index -> CallerOutcome in
                if index == callers {
                    defer { load.stop() }
                    try waitUntil("the callers to get going", within: .seconds(20)) { load.fewestCompleted() >= 5 }
                    Glibc.kill(pid_t(victim), SIGKILL)
                    try waitUntil("the pool back to 3 instances without \(victim)", within: .seconds(20)) {
                        let pids = try daemon.listing("Pool")?["instances"]?.arrayValue?.compactMap { $0["pid"]?.intValue } ?? []
                        return pids.count == 3 && !pids.contains(victim)
                    }
                    let mark = load.completed()
                    try waitUntil("more calls after the replacement", within: .seconds(20)) {
                        zip(load.completed(), mark).allSatisfy { now, then in now >= then + 10 }
                    }
                    return CallerOutcome()
                }
                let peer = try daemon.connect()
                defer { peer.close() }
                var outcome = CallerOutcome()
                var n = 0
                while !load.stopped {
                    n += 1
                    let slow = n % 2 == 1
                    let id = try peer.request(
                        "Pool", slow ? "sleep" : "whoami", params: slow ? ["ms": 15] : nil, id: .string("c\(index)-\(n)"))
                    let reply = try peer.response(to: id, within: .seconds(15))
                    outcome.calls += 1
                    if let code = reply.errorCode {
                        outcome.errors[code, default: 0] += 1
                    } else if let pid = reply["result"]?["pid"]?.intValue {
                        outcome.pids.insert(pid)
                    } else if reply["result"] != ["slept": 15] {
                        outcome.unexpected.append(reply.jsonText)
                    }
                    load.complete(index)
                }
                // Exactly one reply per call: nothing else is waiting.
                try peer.expectNothingPendingBeforePing()
                return outcome
            }

            let calls = outcomes.map(\.calls).reduce(0, +)
            var errors: [String: Int] = [:]
            for outcome in outcomes { errors.merge(outcome.errors, uniquingKeysWith: +) }
            #expect(outcomes.allSatisfy { $0.unexpected.isEmpty }, "\(outcomes.flatMap(\.unexpected))")
            #expect(Set(errors.keys).isSubset(of: ["component_unavailable"]), "\(errors)")
            // Each caller has one call in flight at a time: at most that many were on the killed instance.
            #expect(errors["component_unavailable", default: 0] <= callers, "\(errors) of \(calls) calls")

            let after = try Self.status(control, "Pool")
            let pidsAfter = Set(after["pids"]?.arrayValue?.compactMap(\.intValue) ?? [])
            #expect(pidsAfter.count == 3 && !pidsAfter.contains(victim), "\(after.jsonText)")
            #expect(pidsAfter.subtracting(pidsBefore).count == 1, "\(after.jsonText)")
            #expect(after["instances"]?.arrayValue?.count == 3, "\(after.jsonText)")
            #expect(after["state"] == "running", "\(after.jsonText)")
            #expect(after["restarts"] == 1, "\(after.jsonText)")
            #expect(after["last_exit"] == "killed by signal 9", "\(after.jsonText)")
            // The replacement serves calls.
            let replacement = try #require(pidsAfter.subtracting(pidsBefore).first)
            let served = outcomes.reduce(into: Set<Int64>()) { $0.formUnion($1.pids) }
            #expect(served.contains(replacement), "the replacement \(replacement) served none of \(served)")
        }

        // MARK: - Restarts

        @Test("A crashing component is restarted with a doubling backoff until restart_limit, then failed")
        func restartBackoffAndLimit() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let log = ComponentLog(world.directory.file("flaky.log"))
            try folder.write(
                "flaky.json",
                folder.sequencer(
                    "Flaky", log: log, environment: ["COMPONENT_EXIT_AFTER_REGISTER": "9"],
                    members: ["restart_backoff_ms": 200, "restart_limit": 3]))
            let daemon = try world.daemon(["--components", folder.path])
            let peer = try world.peer(daemon)

            #expect(try peer.call("mediator", "start", params: ["target": "Flaky"], within: .seconds(20))["result"] != nil)
            try waitUntil("Flaky to be given up\(daemon.process.logTail())", within: .seconds(20)) {
                try Self.status(peer, "Flaky")["state"] == "failed"
            }
            let status = try Self.status(peer, "Flaky")
            #expect(status["restarts"] == 3, "\(status.jsonText)")
            #expect(status["last_exit"] == "exited with status 9", "\(status.jsonText)")
            #expect(status["pids"] == [], "\(status.jsonText)")
            let starts = log.lines.filter { $0.word == "started" }
            #expect(starts.count == 4, "one start and 3 restarts: \(log.text)")
            // Each restart waits the backoff (200, 400, 800 ms) after the exit before it.
            let exits = log.lines.filter { $0.word == "exit" }
            for (index, backoff) in [0.2, 0.4, 0.8].enumerated() where index + 1 < starts.count && index < exits.count {
                let gap = starts[index + 1].time - exits[index].time
                #expect(gap >= backoff - 0.02, "restart \(index + 1) came \(gap) s after the exit, backoff \(backoff) s")
                #expect(gap < backoff + 3, "restart \(index + 1) came \(gap) s after the exit, backoff \(backoff) s")
            }
            let refused = try peer.call("Flaky", "seq")
            #expect(refused.errorCode == "activation_failed", "\(refused.jsonText)")
        }

        @Test("A crashed exclusive component is restarted; a call made meanwhile is held and served by the new process")
        func crashedComponentRestartsAndServesHeldCall() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let log = ComponentLog(world.directory.file("solo.log"))
            try folder.write("solo.json", folder.sequencer("Solo", log: log, members: ["restart_backoff_ms": 100]))
            let daemon = try world.daemon(["--components", folder.path])
            let peer = try world.peer(daemon)
            let first = try #require(try peer.result("Solo", "whoami", within: .seconds(20))["pid"]?.intValue)

            // It answers, disconnects, and exits with status 9 a second later.
            _ = try peer.result("Solo", "quit", params: ["linger_ms": 1000, "status": 9])
            try waitUntil("Solo to disconnect") { try daemon.listing("Solo")?["instances"] == [] }
            let during = try peer.request("Solo", "seq", timeoutMs: 15_000)
            let reply = try peer.response(to: during, within: .seconds(20))
            let second = try #require(reply["result"]?["pid"]?.intValue, "\(reply.jsonText)\(daemon.process.logTail())")
            #expect(second != first)
            let status = try Self.status(peer, "Solo")
            #expect(status["restarts"] == 1, "\(status.jsonText)")
            #expect(status["last_exit"] == "exited with status 9", "\(status.jsonText)")
        }

        @Test("A component that exits 0 by itself is not a failure: the next call starts it again, whatever restart_limit")
        func cleanExitIsNotAFailure() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let log = ComponentLog(world.directory.file("oneshot.log"))
            try folder.write("oneshot.json", folder.sequencer("OneShot", log: log, members: ["restart_limit": 1]))
            let daemon = try world.daemon(["--components", folder.path])
            let peer = try world.peer(daemon)

            // Three times in a row: served by a new process, which then exits 0 on its own.
            var pids: Set<Int64> = []
            for round in 1...3 {
                let reply = try peer.call("OneShot", "seq", within: .seconds(20))
                let pid = try #require(reply["result"]?["pid"]?.intValue, "round \(round): \(reply.jsonText)")
                pids.insert(pid)
                _ = try peer.result("OneShot", "quit")
                try waitUntil("OneShot to exit (round \(round))\(daemon.process.logTail())") {
                    try Self.status(peer, "OneShot")["pids"] == []
                }
                let status = try Self.status(peer, "OneShot")
                #expect(status["state"] == "activatable", "round \(round): \(status.jsonText)")
                #expect(status["last_exit"] == "exited with status 0", "round \(round): \(status.jsonText)")
            }
            #expect(pids.count == 3)
        }

        @Test("A call made after a component disconnected but before it exited (0) is held and starts it again")
        func callWhileExitingCleanlyStartsItAgain() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let log = ComponentLog(world.directory.file("oneshot.log"))
            try folder.write("oneshot.json", folder.sequencer("OneShot", log: log))
            let daemon = try world.daemon(["--components", folder.path])
            let peer = try world.peer(daemon)

            _ = try peer.call("OneShot", "seq", within: .seconds(20))
            _ = try peer.result("OneShot", "quit", params: ["linger_ms": 1000])
            try waitUntil("OneShot to disconnect") { try daemon.listing("OneShot")?["instances"] == [] }
            let during = try peer.request("OneShot", "seq", timeoutMs: 6_000)
            let reply = try peer.response(to: during, within: .seconds(15))
            let after = try Self.status(peer, "OneShot")
            #expect(reply["result"]?["seq"] == 1, "\(reply.jsonText)\n\(after.jsonText)")
        }

        @Test("mediator/start while the component is stopping: answered once it runs again")
        func startWhileStopping() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let log = ComponentLog(world.directory.file("slow.log"))
            try folder.write("slow.json", folder.sequencer("SlowStop", log: log, environment: ["COMPONENT_IGNORE_STOP": "1"]))
            let daemon = try world.daemon(["--components", folder.path, "--component-stop-grace-ms", "1000"])
            let peer = try world.peer(daemon)
            let observer = try world.peer(daemon)
            let first = try #require(try peer.result("SlowStop", "whoami", within: .seconds(20))["pid"]?.intValue)

            #expect(try peer.result("mediator", "stop", params: ["target": "SlowStop"])["state"] == "stopping")
            let start = try peer.request("mediator", "start", params: ["target": "SlowStop"])
            // It ignores mediator.stop, so it is still stopping (SIGTERM comes after 1 s).
            #expect(try Self.status(observer, "SlowStop")["state"] == "stopping")
            let reply = try peer.response(to: start, within: .seconds(10))
            #expect(reply["result"] == ["target": "SlowStop", "state": "running"], "\(reply.jsonText)\(daemon.process.logTail())")
            let second = try peer.result("SlowStop", "whoami", within: .seconds(20))["pid"]?.intValue
            #expect(second != nil && second != first)
        }

        // MARK: - At boot

        @Test("at-boot components start after the daemon listens, by priority, each group after the previous settled")
        func atBootPriorityOrder() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let log = ComponentLog(world.directory.file("boot.log"))
            // File names and target names in another order than the priorities.
            try folder.write("10-alpha.json", folder.sequencer("Alpha", log: log, members: ["start": "at-boot", "priority": 20]))
            try folder.write("20-mid.json", folder.sequencer("Mid", log: log, members: ["start": "at-boot", "priority": 10]))
            try folder.write(
                "21-mid2.json",
                folder.sequencer("Mid2", log: log, environment: ["COMPONENT_DELAY_MS": "300"], members: ["start": "at-boot", "priority": 10]))
            try folder.write(
                "30-zeta.json",
                folder.sequencer("Zeta", log: log, environment: ["COMPONENT_DELAY_MS": "300"], members: ["start": "at-boot", "priority": 0]))
            let crash = try folder.script("crash.sh", """
                #!/bin/sh
                echo "Crash $$ 0 started" >> "$COMPONENT_LOG"
                exit 3
                """)
            try folder.write("40-crash.json", [
                "target": "Crash", "actions": ["x"], "exec": .array([.string(crash)]), "start": "at-boot", "priority": 5,
                "environment": ["COMPONENT_LOG": .string(log.path)],
            ])
            try folder.write("50-lazy.json", folder.sequencer("Lazy", log: log))

            let notify = try NotifyListener(path: world.directory.socket("notify"))
            let socketPath = world.directory.socket()
            var environment = ProcessInfo.processInfo.environment
            environment["NOTIFY_SOCKET"] = notify.path
            let daemon = try world.spawn(
                Paths.mediatord,
                ["--socket", socketPath, "--log-level", "debug", "--components", folder.path, "--wait-for-boot-components"],
                label: "mediatord", environment: environment)
            _ = try notify.await("READY=1\(daemon.logTail())", within: .seconds(30)) { $0.contains("READY=1") }

            // READY=1 only once every at-boot component registered or failed.
            let peer = try RawPeer.connect(socketPath)
            defer { peer.close() }
            let targets = try peer.result("mediator", "list")["targets"]?.arrayValue ?? []
            func entry(_ name: String) -> JSONValue? { targets.first { $0["target"]?.stringValue == name } }
            for name in ["Zeta", "Mid", "Mid2", "Alpha"] {
                #expect(entry(name)?["state"] == "running", "\(name): \(entry(name)?.jsonText ?? "not listed")\n\(log.text)")
            }
            #expect(entry("Crash")?["state"] == "activatable", "\(entry("Crash")?.jsonText ?? "not listed")")
            #expect(try Self.status(peer, "Crash")["last_exit"] == "exited with status 3")
            #expect(entry("Lazy")?["state"] == "activatable", "on-demand started at boot: \(entry("Lazy")?.jsonText ?? "")")
            #expect(!log.lines.contains { $0.target == "Lazy" }, "\(log.text)")

            // Each group starts only after the one before registered (or failed).
            let lines = log.lines
            func index(_ target: String, _ word: String) throws -> Int {
                try #require(lines.firstIndex { $0.target == target && $0.word == word }, "no \(target) \(word) in\n\(log.text)")
            }
            #expect(try index("Zeta", "registering") < index("Crash", "started"), "\(log.text)")
            #expect(try index("Crash", "started") < index("Mid", "started"), "\(log.text)")
            #expect(try index("Crash", "started") < index("Mid2", "started"), "\(log.text)")
            #expect(try index("Mid", "registering") < index("Alpha", "started"), "\(log.text)")
            #expect(try index("Mid2", "registering") < index("Alpha", "started"), "\(log.text)")

            // Instance numbers follow the registration order.
            func instance(_ name: String) -> Int64 { entry(name)?["instances"]?.arrayValue?.first?["instance"]?.intValue ?? -1 }
            #expect(instance("Zeta") < instance("Mid") && instance("Zeta") < instance("Mid2"), "\(targets)")
            #expect(instance("Mid") < instance("Alpha") && instance("Mid2") < instance("Alpha"), "\(targets)")
        }

        // MARK: - Reload

        @Test("SIGHUP reloads manifests: new ones are activatable, removed ones stop once their calls finish")
        func reloadAddsAndRemoves() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let log = ComponentLog(world.directory.file("reload.log"))
            let gate = world.directory.file("gate")
            try folder.write("keep.json", folder.sequencer("Keep", log: log))
            try folder.write("gone.json", folder.sequencer("Gone", log: log))
            try folder.write("unused.json", folder.sequencer("Unused", log: log))
            let daemon = try world.daemon(["--components", folder.path, "--component-stop-grace-ms", "500"])
            let peer = try world.peer(daemon)
            let keepPid = try #require(try peer.result("Keep", "whoami", within: .seconds(20))["pid"]?.intValue)

            // Gone is busy with a call that ends only when the gate file appears.
            let slow = try peer.request("Gone", "wait", params: ["file": .string(gate)])
            try waitUntil("Gone to have the call in flight\(daemon.process.logTail())", within: .seconds(20)) {
                try daemon.listing("Gone")?["instances"]?.arrayValue?.first?["in_flight"] == 1
            }

            try folder.remove("gone.json")
            try folder.remove("unused.json")
            try folder.write("new.json", folder.sequencer("New", log: log))
            let bad = try folder.write("bad.json", ["target": "Bad", "actions": ["x"], "exec": "not a list"])
            daemon.process.signal(SIGHUP)
            try waitUntil("New to be listed after SIGHUP\(daemon.process.logTail())") { try daemon.listing("New") != nil }

            let new = try #require(try daemon.listing("New"))
            #expect(new["state"] == "activatable" && new["activation"] == "exec", "\(new.jsonText)")
            #expect(try daemon.listing("Unused") == nil, "a removed manifest that never ran is forgotten at once")
            // The skipped manifest is reported, not served.
            #expect(try daemon.listing("Bad")?["state"] == "invalid")
            // Gone still has a call in flight: it keeps running until the call ends.
            let busy = try #require(try daemon.listing("Gone"), "Gone dropped with a call in flight")
            #expect(busy["state"] == "running", "\(busy.jsonText)")
            #expect(!log.lines.contains { $0.target == "Gone" && $0.word == "stop" }, "\(log.text)")
            try waitUntil("the bad manifest to be logged") {
                Self.logLines(daemon).contains { $0.contains("component manifest skipped") && $0.contains(bad) && $0.contains("member=exec") }
            }

            #expect(FileManager.default.createFile(atPath: gate, contents: nil))
            let finished = try peer.response(to: slow, within: .seconds(20))
            #expect(finished["result"]?["seq"] == 1, "the call in flight must finish normally: \(finished.jsonText)")
            try waitUntil("Gone to stop and be unlisted\(daemon.process.logTail())", within: .seconds(10)) {
                try daemon.listing("Gone") == nil
            }
            let stop = try #require(log.lines.first { $0.target == "Gone" && $0.word == "stop" }, "\(log.text)")
            #expect(try JSONValue.parse(stop.rest) == ["reason": "removed", "target": "Gone"], "\(stop.rest)")
            let gone = try peer.call("Gone", "seq")
            #expect(gone.errorCode == "target_not_found", "\(gone.jsonText)")

            // The others are untouched, and the new one starts on demand.
            #expect(try peer.result("Keep", "whoami")["pid"]?.intValue == keepPid)
            #expect(try peer.result("New", "seq", within: .seconds(20))["seq"] == 1)
            #expect(try daemon.listing("New")?["state"] == "running")
        }

        @Test("A bad manifest is logged (file, member, reason) and skipped; the good ones beside it work")
        func badManifestSkipped() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let log = ComponentLog(world.directory.file("good.log"))
            try folder.write("a-good.json", folder.sequencer("GoodA", log: log))
            let wrongType = try folder.write("b-bad.json", ["target": "BadB", "actions": ["x"], "exec": "/bin/true"])
            var typo = folder.sequencer("TypoC", log: log)
            if case .object(var members) = typo {
                members["idle_exit"] = 5
                typo = .object(members)
            }
            let unknownMember = try folder.write("c-typo.json", typo)
            let broken = folder.path + "/d-broken.json"
            try #"{"target": "BrokenD", "#.write(toFile: broken, atomically: true, encoding: .utf8)
            let relative = try folder.write("e-relative.json", ["target": "RelE", "actions": ["x"], "exec": ["bin/x"]])
            try folder.write("f-good.json", folder.sequencer("GoodF", log: log))
            let daemon = try world.daemon(["--components", folder.path])
            let peer = try world.peer(daemon)

            let listed = try daemon.list()
            func names(_ invalid: Bool) -> Set<String> {
                Set(listed.filter { ($0["state"] == "invalid") == invalid }.compactMap { $0["target"]?.stringValue })
            }
            #expect(names(false) == ["GoodA", "GoodF"], "\(listed)")
            // Reported in state invalid when the target can be read (BrokenD's file is not JSON).
            #expect(names(true) == ["BadB", "TypoC", "RelE"], "\(listed)")
            #expect(try peer.result("GoodA", "seq", within: .seconds(20))["seq"] == 1)
            #expect(try peer.result("GoodF", "seq", within: .seconds(20))["seq"] == 1)
            #expect(try peer.call("BadB", "x").errorCode == "target_not_found")

            let lines = Self.logLines(daemon)
            func logged(_ file: String, _ fragment: String) -> Bool {
                lines.contains { $0.contains("component manifest skipped") && $0.contains(file) && $0.contains(fragment) }
            }
            #expect(logged(wrongType, "member=exec"), "\(daemon.process.logTail())")
            #expect(logged(unknownMember, "member=idle_exit"), "\(daemon.process.logTail())")
            #expect(logged(unknownMember, "unknown member"), "\(daemon.process.logTail())")
            #expect(logged(broken, "not valid JSON"), "\(daemon.process.logTail())")
            #expect(logged(relative, "absolute path"), "\(daemon.process.logTail())")
        }

        // MARK: - start, stop, status

        @Test("mediatorctl start, status and stop drive a component by its manifest")
        func cliStartStopStatus() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let log = ComponentLog(world.directory.file("ctl.log"))
            let file = try folder.write("ctl.json", folder.sequencer("Ctl", log: log))
            let script = try folder.script("crash.sh", "#!/bin/sh\nexit 7\n")
            try folder.write("crash.json", ["target": "Crash", "actions": ["x"], "exec": .array([.string(script)])])
            let daemon = try world.daemon(["--components", folder.path, "--component-stop-grace-ms", "500"])
            let cli = CLI(daemon)
            let peer = try world.peer(daemon)

            let idle = try cli.json("status", ["Ctl"])
            #expect(idle["state"] == "activatable" && idle["pids"] == [], "\(idle.jsonText)")
            #expect(idle["manifest"]?.stringValue == file && idle["activation"] == "exec", "\(idle.jsonText)")

            #expect(try cli.json("start", ["Ctl"]) == ["target": "Ctl", "state": "running"])
            let running = try cli.json("status", ["Ctl"])
            #expect(running["state"] == "running", "\(running.jsonText)")
            #expect(running["restarts"] == 0 && running["calls_served"] == 0, "\(running.jsonText)")
            #expect(running["uptime_s"]?.doubleValue != nil, "\(running.jsonText)")
            let pid = try #require(running["pids"]?.arrayValue?.first?.intValue, "\(running.jsonText)")
            #expect(running["pids"]?.arrayValue?.count == 1)
            #expect(running["instances"]?.arrayValue?.first?["pid"]?.intValue == pid, "\(running.jsonText)")
            #expect(try peer.result("Ctl", "whoami")["pid"]?.intValue == pid)
            // Starting a running component is answered at once.
            #expect(try cli.json("start", ["Ctl"]) == ["target": "Ctl", "state": "running"])

            #expect(try cli.json("stop", ["Ctl"]) == ["target": "Ctl", "state": "stopping"])
            try waitUntil("Ctl to be stopped") { try cli.json("status", ["Ctl"])["state"] == "activatable" }
            let stopped = try cli.json("status", ["Ctl"])
            #expect(stopped["pids"] == [] && stopped["instances"] == [], "\(stopped.jsonText)")
            #expect(stopped["last_exit"] == "exited with status 0", "\(stopped.jsonText)")
            let stop = try #require(log.lines.first { $0.word == "stop" }, "\(log.text)")
            #expect(try JSONValue.parse(stop.rest) == ["reason": "requested", "target": "Ctl"], "\(stop.rest)")
            #expect(!log.lines.contains { $0.word == "sigterm" }, "it exited on mediator.stop, before any SIGTERM")
            // Stopping a stopped component is not an error.
            #expect(try cli.json("stop", ["Ctl"]) == ["target": "Ctl", "state": "activatable"])

            let failed = try cli.run("start", ["Crash"])
            #expect(failed.status == 1, "\(failed)")
            #expect(failed.stderr.contains("activation_failed"), "\(failed)")
            #expect(failed.stderr.contains("exited with status 7"), "\(failed)")

            for verb in ["start", "stop", "status"] {
                let unknown = try cli.run(verb, ["Nobody"])
                #expect(unknown.status == 1, "\(verb): \(unknown)")
                #expect(unknown.stderr.contains("target_not_found"), "\(verb): \(unknown)")
            }
        }

        // MARK: - Helpers

        static func status(_ peer: RawPeer, _ target: String) throws -> JSONValue {
            try peer.result("mediator", "status", params: ["target": .string(target)])
        }

        /// The daemon's log (its stderr), line by line.
        static func logLines(_ daemon: DaemonProcess) -> [String] {
            daemon.process.stderr.split(separator: "\n").map(String.init)
        }
    }
}

/// The components folder of one test, with the manifests and scripts it holds.
struct ComponentsFolder {
    let path: String
    let directory: TestDirectory

    init(_ world: World) throws {
        directory = world.directory
        path = world.directory.file("components")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Writes a manifest; returns its path.
    @discardableResult
    func write(_ name: String, _ manifest: JSONValue) throws -> String {
        let file = path + "/" + name
        try manifest.jsonText.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    func remove(_ name: String) throws {
        try FileManager.default.removeItem(atPath: path + "/" + name)
    }

    /// An executable script in the test's folder (not in the components folder).
    func script(_ name: String, _ body: String) throws -> String {
        let file = directory.file(name)
        try (body.hasSuffix("\n") ? body : body + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        guard chmod(file, 0o755) == 0 else { throw HarnessError("chmod \(file): \(String(cString: strerror(errno)))") }
        return file
    }

    /// A manifest running `sequencer.py` for `target`, logging into `log`.
    func sequencer(
        _ target: String, log: ComponentLog, environment: [String: String] = [:], members: [String: JSONValue] = [:]
    ) -> JSONValue {
        let program = directory.file("sequencer.py")
        if !FileManager.default.fileExists(atPath: program) {
            _ = FileManager.default.createFile(atPath: program, contents: Data(sequencerSource.utf8))
        }
        var variables = environment
        variables["COMPONENT_LOG"] = log.path
        var manifest: [String: JSONValue] = [
            "target": .string(target), "actions": ["seq", "whoami", "sleep", "wait", "quit"],
            "exec": [.string(Paths.python), "-u", .string(program)],
            "environment": .object(variables.mapValues { .string($0) }),
        ]
        for (key, value) in members { manifest[key] = value }
        return .object(manifest)
    }

    /// A manifest running the Python Notes example as `target`.
    func notes(_ target: String, _ members: [String: JSONValue] = [:], extraArguments: [String] = []) -> JSONValue {
        let arguments = [Paths.python, "-u", Paths.notesComponent, "--target", target] + extraArguments
        var manifest: [String: JSONValue] = [
            "target": .string(target), "actions": ["add", "get", "list", "echo", "sleep", "whoami", "notFound"],
            "exec": .array(arguments.map { .string($0) }),
        ]
        for (key, value) in members { manifest[key] = value }
        return .object(manifest)
    }
}

/// What `sequencer.py` components wrote: `TARGET PID MONOTONIC-TIME WORD [REST]` per line.
struct ComponentLog {
    let path: String
    init(_ path: String) { self.path = path }

    struct Line {
        var target: String
        var pid: Int64
        var time: Double
        var word: String
        var rest: String
    }

    var text: String { ChildProcess.read(path) }

    var lines: [Line] {
        ChildProcess.lines(text).compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false).map(String.init)
            guard parts.count >= 4, let pid = Int64(parts[1]), let time = Double(parts[2]) else { return nil }
            return Line(target: parts[0], pid: pid, time: time, word: parts[3], rest: parts.count > 4 ? parts[4] : "")
        }
    }
}

/// The callers' progress in the pool test, shared between threads.
private final class Load: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [Int]
    private var stopping = false

    init(callers: Int) { counts = Array(repeating: 0, count: callers) }

    func complete(_ caller: Int) { lock.withLock { counts[caller] += 1 } }
    func completed() -> [Int] { lock.withLock { counts } }
    func fewestCompleted() -> Int { lock.withLock { counts.min() ?? 0 } }
    func stop() { lock.withLock { stopping = true } }
    var stopped: Bool { lock.withLock { stopping } }
}

private struct CallerOutcome: Sendable {
    var calls = 0
    var errors: [String: Int] = [:]
    var pids: Set<Int64> = []
    var unexpected: [String] = []
}

/// A single-threaded component: it connects to $MEDIATOR_SOCKET, registers
/// $MEDIATOR_TARGET and answers calls strictly in arrival order, numbering
/// them (`seq`). It appends what happens to it to $COMPONENT_LOG, with
/// CLOCK_MONOTONIC times. $COMPONENT_GATE: wait for that file before
/// registering; $COMPONENT_DELAY_MS: wait that long before registering;
/// $COMPONENT_IGNORE_STOP=1: stay on `mediator.stop` (exits 0 on SIGTERM);
/// $COMPONENT_EXIT_AFTER_REGISTER=N: exit with status N once registered.
/// The action `quit` {linger_ms, status} answers, disconnects, waits
/// linger_ms, then exits with that status.
private let sequencerSource = #"""
    import json, os, signal, socket, sys, time

    target = os.environ["MEDIATOR_TARGET"]
    log_path = os.environ.get("COMPONENT_LOG")

    def note(text):
        if log_path:
            with open(log_path, "a") as f:
                f.write("%s %d %.6f %s\n" % (target, os.getpid(), time.monotonic(), text))

    def on_term(signum, frame):
        note("sigterm")
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    note("started")

    def wait_for(path, seconds):
        deadline = time.monotonic() + seconds
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    gate = os.environ.get("COMPONENT_GATE")
    if gate and not wait_for(gate, 30):
        note("gate-timeout")
        sys.exit(4)
    time.sleep(int(os.environ.get("COMPONENT_DELAY_MS", "0")) / 1000)

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(os.environ["MEDIATOR_SOCKET"])
    reader = sock.makefile("rb")

    def send(message):
        sock.sendall((json.dumps(message, separators=(",", ":")) + "\n").encode())

    note("registering")
    send({"id": "register", "target": "mediator", "action": "register",
          "params": {"target": target, "actions": ["seq", "whoami", "sleep", "wait", "quit"],
                     "mode": os.environ.get("COMPONENT_MODE", "exclusive")}})
    served = 0
    for line in reader:
        if not line.strip():
            continue
        message = json.loads(line)
        if message.get("id") == "register" and ("result" in message or "error" in message):
            if "error" in message:
                note("register-failed " + json.dumps(message["error"]))
                sys.exit(5)
            note("registered %s" % message["result"].get("instance"))
            crash = os.environ.get("COMPONENT_EXIT_AFTER_REGISTER")
            if crash:
                note("exit")
                sys.exit(int(crash))
            continue
        if message.get("event") == "mediator.stop":
            note("stop " + json.dumps(message.get("data"), sort_keys=True))
            if os.environ.get("COMPONENT_IGNORE_STOP") != "1":
                note("exit")
                sys.exit(0)
            continue
        if "action" in message:
            served += 1
            action, params = message["action"], message.get("params") or {}
            if action == "sleep":
                time.sleep(params.get("ms", 0) / 1000)
            if action == "wait":
                wait_for(params["file"], 30)
            note("served %d" % served)
            if message.get("id") is not None:
                send({"id": message["id"], "result": {"seq": served, "pid": os.getpid(), "params": params}})
            if action == "quit":
                sock.shutdown(socket.SHUT_RDWR)  # close() alone waits for the reader's reference
                reader.close()
                sock.close()
                note("disconnected")
                time.sleep(params.get("linger_ms", 0) / 1000)
                note("exit")
                sys.exit(params.get("status", 0))
    note("eof")
    sys.exit(1)
    """#
