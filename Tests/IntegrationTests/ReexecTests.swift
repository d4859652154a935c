import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// Re-executing mediatord in place (issue 28): `mediator/reexec`,
    /// `mediatorctl daemon-reexec` and SIGUSR2 hand every connection and
    /// the broker's state to a new image of the binary under the same pid.
    @Suite("Re-exec in place")
    struct Reexec {
        @Test("Under load (20 callers), re-exec after re-exec: no connection closed, every call answered once, no re-registration, no event lost")
        func underLoad() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            _ = try folder.write("managed.json", folder.notes("Managed"))
            let daemon = try world.daemon(["--components", folder.path])
            _ = try world.notes(daemon)
            _ = try world.notes(daemon, target: "NotesPool", pool: true)
            _ = try world.notes(daemon, target: "NotesPool", pool: true)
            // Started by the daemon on this first call: a managed component under load too.
            _ = try world.peer(daemon).result("Managed", "whoami", within: .seconds(20))
            // A raw component with a stream that spans the re-execs.
            let streamer = try world.peer(daemon)
            _ = try streamer.register("Streamer", actions: ["feed"])
            let instancesBefore = try instanceNumbers(daemon)
            let streamCaller = try world.peer(daemon)
            let streamID = try streamCaller.request("Streamer", "feed", timeoutMs: 60_000, more: true)
            let streamRequest = try streamer.incomingRequest()

            let subscriber = try world.peer(daemon)
            _ = try subscriber.result("mediator", "subscribe", params: ["events": ["reexec.*"]])

            let load = CallLoops(socketPath: daemon.socketPath)
            // 20 callers: an exclusive target, a pool of two, a managed component.
            let callers = Array(repeating: ("Notes", "echo"), count: 6) + Array(repeating: ("NotesPool", "echo"), count: 10)
                + Array(repeating: ("Managed", "echo"), count: 4)
            try load.start(callers: callers, publisher: "reexec.tick")
            defer { load.stop() }

            let admin = try world.peer(daemon)
            let sleeper = try world.peer(daemon)
            let pid = daemon.pid
            var reexecTimes: [Duration] = []
            for round in 0..<5 {
                try load.waitForProgress()
                // A call in flight in a Python component across the exec.
                let sleepID = try sleeper.request("Notes", "sleep", params: ["ms": 300])
                try streamer.reply(partOf: streamRequest, ["round": .int(Int64(round))])
                let started = ContinuousClock.now
                let answer: JSONValue
                if round == 2 {
                    // The CLI verb once; the others straight from a peer.
                    answer = try CLI(daemon).json("daemon-reexec")
                } else {
                    answer = try admin.result("mediator", "reexec", within: .seconds(20))
                }
                reexecTimes.append(ContinuousClock.now - started)
                #expect(answer["pid"] == .int(Int64(pid)), "\(answer.jsonText)")
                #expect(answer["reexecs"] == .int(Int64(round + 1)), "\(answer.jsonText)")
                #expect(try sleeper.response(to: sleepID)["result"] == ["slept": 300])
                #expect(daemon.process.isRunning)
            }
            try load.waitForProgress()
            let report = load.stop()

            try streamer.reply(to: streamRequest, result: ["done": true])
            for round in 0..<5 {
                let partial = try streamCaller.response(to: streamID)
                #expect(partial["continues"] == true && partial["result"] == ["round": .int(Int64(round))], "\(partial.jsonText)")
            }
            #expect(try streamCaller.response(to: streamID)["result"] == ["done": true])

            #expect(report.failures.isEmpty, "\(report.failures)")
            #expect(report.calls > 0)
            // The issue's target is 250 ms (a release build); a debug build on a busy
            // machine stays well below this looser bound, which catches a stall.
            #expect(report.longest < .seconds(1), "longest call \(report.longest)")
            let events = try (0..<report.published).map { _ in try subscriber.event("reexec.tick") }
            #expect(events.map { $0["data"]?.intValue ?? -1 } == (0..<report.published).map(Int64.init))
            for peer in [streamer, streamCaller, subscriber, admin, sleeper] { try peer.expectNothingPendingBeforePing() }
            #expect(try instanceNumbers(daemon) == instancesBefore, "a component registered again")
            print("re-exec: answered after \(reexecTimes); longest call \(report.longest) over \(report.calls) calls")
        }

        @Test("SIGUSR2 re-executes; no descriptor is left behind by a few re-execs")
        func signalAndDescriptors() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let caller = try world.peer(daemon)
            #expect(try caller.result("Notes", "echo", params: ["n": 1])["n"] == 1)
            let admin = try world.peer(daemon)
            #expect(try admin.result("mediator", "ping") == [:])
            let before = try ProcFS.openFiles(daemon.pid)
            for _ in 0..<3 { _ = try admin.result("mediator", "reexec", within: .seconds(20)) }
            daemon.process.signal(SIGUSR2)
            try waitUntil("the SIGUSR2 re-exec to be counted") {
                try admin.result("mediator", "reexec", within: .seconds(20))["reexecs"] == 5
            }
            #expect(try caller.result("Notes", "echo", params: ["n": 2])["n"] == 2)
            #expect(try ProcFS.openFiles(daemon.pid) == before)
        }

        @Test("Re-execs asked at once, in one line burst: each caller answered once, by an image that carries on")
        func askedAtOnce() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let peers = try (0..<4).map { _ in try world.peer(daemon) }
            // Several asks from one connection in one write, and from the others at once.
            try peers[0].sendLine(
                #"{"id":"a","target":"mediator","action":"reexec"}"# + "\n" + #"{"id":"b","target":"mediator","action":"reexec"}"#)
            let ids = try peers.dropFirst().map { try $0.request("mediator", "reexec") }
            var counts: [Int64] = []
            for id in ["a", "b"] as [JSONValue] {
                counts.append(try #require(try peers[0].response(to: id, within: .seconds(20))["result"]?["reexecs"]?.intValue))
            }
            for (peer, id) in zip(peers.dropFirst(), ids) {
                counts.append(try #require(try peer.response(to: id, within: .seconds(20))["result"]?["reexecs"]?.intValue))
            }
            #expect(counts.allSatisfy { (1...5).contains($0) }, "\(counts)")
            for peer in peers { try peer.expectNothingPendingBeforePing() }
        }

        @Test("A successor that cannot read the snapshot (version 999): each peer gets mediator.restarting, then a fresh daemon serves")
        func incompatibleSnapshot() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(
                ["--test-hooks"], launcher: ["/usr/bin/env", "MEDIATORD_TEST_SNAPSHOT_VERSION=999"])
            let notes = try world.notes(daemon, reconnect: true)
            let idle = try world.peer(daemon)
            #expect(try idle.result("mediator", "ping") == [:])
            let admin = try world.peer(daemon)
            let answer = try admin.result("mediator", "reexec", within: .seconds(20))
            #expect(answer["clean_restart"]?.stringValue?.contains("999") == true, "\(answer.jsonText)")
            for peer in [idle, admin] {
                #expect(try peer.event("mediator.restarting")["data"] == ["reason": "handover_refused"])
                #expect(throws: RawPeer.PeerClosed.self) { try peer.receive() }
            }
            // The library reconnects at once and registers on the fresh daemon.
            try notes.waitUntilReady(count: 2)
            let caller = try world.peer(daemon)
            #expect(try caller.result("Notes", "echo", params: ["n": 3])["n"] == 3)
            #expect(daemon.process.isRunning)
        }

        @Test("Managed components survive re-execs: same process, output still logged, exit status, restart and idle exit seen by the new image")
        func managedComponents() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            // A shell that stays the daemon's child and reports on its stdout when Notes ends.
            let notes = [Paths.python, "-u", Paths.notesComponent, "--target", "Managed"].map { "'\($0)'" }.joined(separator: " ")
            _ = try folder.write("managed.json", folder.notes("Managed", [
                "exec": ["/bin/sh", "-c", .string("\(notes); echo \"managed notes exited $?\"")],
                "restart": "always", "restart_backoff_ms": 50,
            ]))
            _ = try folder.write("idle.json", folder.notes("IdleManaged", ["idle_exit_s": 2]))
            let daemon = try world.daemon(["--components", folder.path, "--component-stop-grace-ms", "500"])
            let peer = try world.peer(daemon)
            let python = try #require(try peer.result("Managed", "whoami", within: .seconds(20))["pid"]?.intValue)
            let shell = try #require(try ActivationTests.status(peer, "Managed")["pids"]?.arrayValue?.first?.intValue)
            _ = try peer.result("IdleManaged", "whoami", within: .seconds(20))
            #expect(try peer.result("Managed", "add", params: ["text": "kept"])["id"] == 1)

            let admin = try world.peer(daemon)
            for _ in 0..<3 { _ = try admin.result("mediator", "reexec", within: .seconds(20)) }

            // The same processes, known as running, their notes kept: nothing restarted.
            #expect(try peer.result("Managed", "whoami")["pid"]?.intValue == python)
            #expect(try peer.result("Managed", "list")["notes"]?.arrayValue?.count == 1)
            let status = try ActivationTests.status(peer, "Managed")
            #expect(status["state"] == "running" && status["pids"] == [.int(shell)] && status["restarts"] == 0, "\(status.jsonText)")

            // Its end reaches the new image: output through the pipe kept open, exit status, restart.
            kill(pid_t(python), SIGTERM)
            try waitUntil("the wrapper's line in the daemon's log\(daemon.process.logTail())") {
                daemon.process.stderr.contains("managed notes exited 0")
            }
            try waitUntil("Managed to be restarted\(daemon.process.logTail())", within: .seconds(20)) {
                let now = try ActivationTests.status(peer, "Managed")
                return now["restarts"] == 1 && now["state"] == "running" && now["pids"] != [.int(shell)]
            }
            #expect(try ActivationTests.status(peer, "Managed")["last_exit"] == "exited with status 0")
            #expect(try peer.result("Managed", "whoami", within: .seconds(20))["pid"]?.intValue != python)

            // Idle exit, timed from before the re-execs, is carried out by the last image.
            try waitUntil("IdleManaged to stop when idle\(daemon.process.logTail())", within: .seconds(15)) {
                try ActivationTests.status(peer, "IdleManaged")["state"] == "activatable"
            }
            #expect(try ActivationTests.status(peer, "IdleManaged")["last_exit"] == "exited with status 0")
        }

        @Test("A re-exec carries calls held for a starting component: the new image holds them and forwards them, in order, once it registers")
        func carriesHeldCalls() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let gate = world.directory.file("gate")
            _ = try folder.write("seq.json", folder.sequencer(
                "Seq", log: ComponentLog(world.directory.file("seq.log")), environment: ["COMPONENT_GATE": gate]))
            let daemon = try world.daemon(["--components", folder.path])
            let caller = try world.peer(daemon)
            let ids = try (1...5).map { try caller.request("Seq", "seq", params: ["n": .int(Int64($0))]) }
            let observer = try world.peer(daemon)
            try waitUntil("the calls to be held\(daemon.process.logTail())", within: .seconds(20)) {
                try ActivationTests.status(observer, "Seq")["held_calls"] == 5
            }
            let admin = try world.peer(daemon)
            // The component cannot register yet (its gate is shut): the re-exec does not wait for it.
            #expect(try admin.result("mediator", "reexec", within: .seconds(20))["reexecs"] == 1)
            let status = try ActivationTests.status(observer, "Seq")
            #expect(status["held_calls"] == 5 && status["state"] == "starting", "\(status.jsonText)")
            #expect(FileManager.default.createFile(atPath: gate, contents: nil))
            for (index, id) in ids.enumerated() {
                #expect(try caller.response(to: id, within: .seconds(20))["result"]?["seq"] == .int(Int64(index + 1)))
            }
            try caller.expectNothingPendingBeforePing()
            #expect(try ActivationTests.status(observer, "Seq")["state"] == "running")
        }

        @Test("A failed exec carries on in the old image and answers the error; SIGHUP after the binary was replaced on disk runs the new one in place")
        func failedExecAndUpgrade() throws {
            let world = try World()
            defer { world.close() }
            // A copy of the binary the test may remove and replace, as a package upgrade does.
            let binary = world.directory.file("mediatord")
            // The file itself, not a link to it (MEDIATOR_BIN_DIR may hold links).
            let built = URL(fileURLWithPath: Paths.mediatord).resolvingSymlinksInPath().path
            try FileManager.default.copyItem(atPath: built, toPath: binary)
            let daemon = try world.daemon(launcher: ["/bin/sh", "-c", "shift; exec \"$0\" \"$@\"", binary])
            _ = try world.notes(daemon)
            let caller = try world.peer(daemon)
            #expect(try caller.result("Notes", "echo", params: ["n": 1])["n"] == 1)

            try FileManager.default.removeItem(atPath: binary)
            let admin = try world.peer(daemon)
            let failed = try admin.call("mediator", "reexec", within: .seconds(20))
            #expect(failed.errorCode == "internal", "\(failed.jsonText)")
            #expect(failed["error"]?["message"]?.stringValue?.contains("No such file") == true, "\(failed.jsonText)")
            #expect(try caller.result("Notes", "echo", params: ["n": 2])["n"] == 2, "the old image serves on")
            #expect(try executable(of: daemon).hasSuffix("(deleted)"))

            // The upgrade: a new file under the old name; a reload finds it and re-executes it.
            try FileManager.default.copyItem(atPath: built, toPath: binary + ".new")
            #expect(rename(binary + ".new", binary) == 0)
            daemon.process.signal(SIGHUP)
            try waitUntil("the daemon to run the new binary\(daemon.process.logTail())") {
                // (Unreadable for a moment while the exec replaces the image.)
                (try? executable(of: daemon)) == binary
            }
            #expect(try caller.result("Notes", "echo", params: ["n": 3])["n"] == 3)
            #expect(try admin.result("mediator", "reexec", within: .seconds(20))["reexecs"] == 2)
        }

        /// What /proc says the daemon runs (`... (deleted)` once replaced on disk).
        private func executable(of daemon: DaemonProcess) throws -> String {
            try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(daemon.pid)/exe")
        }

        /// Each registered instance, as `target#instance`, sorted.
        private func instanceNumbers(_ daemon: DaemonProcess) throws -> [String] {
            try daemon.list().flatMap { target in
                (target["instances"]?.arrayValue ?? []).map {
                    "\(target["target"]?.stringValue ?? "")#\($0["instance"]?.intValue ?? -1)"
                }
            }.sorted()
        }
    }
}

extension RawPeer {
    /// A partial answer (`continues`) to a `more` request this peer received.
    func reply(partOf request: JSONValue, _ result: JSONValue) throws {
        try send(["id": request["id"] ?? .null, "result": result, "continues": true])
    }
}
