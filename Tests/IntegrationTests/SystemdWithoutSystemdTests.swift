import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// The launcher's systemd integration, exercised without systemd: a
    /// datagram socket stands in for NOTIFY_SOCKET, and
    /// `systemd-socket-activate` passes the listening socket.
    @Suite("systemd protocols without systemd")
    struct SystemdWithoutSystemd {
        /// Starts mediatord with NOTIFY_SOCKET (and more environment) set.
        func notifiedDaemon(
            _ world: World, environment extra: [String: String] = [:], arguments: [String] = []
        ) throws -> (ChildProcess, NotifyListener, String) {
            let notify = try NotifyListener(path: world.directory.socket("notify"))
            let socketPath = world.directory.socket()
            var environment = ProcessInfo.processInfo.environment
            environment["NOTIFY_SOCKET"] = notify.path
            for (key, value) in extra { environment[key] = value }
            let daemon = try world.spawn(
                Paths.mediatord, ["--socket", socketPath, "--log-level", "debug"] + arguments, label: "mediatord",
                environment: environment)
            return (daemon, notify, socketPath)
        }

        @Test("READY=1 comes only once the socket answers, with a STATUS line; SIGTERM sends STOPPING=1")
        func readyAndStopping() throws {
            let world = try World()
            defer { world.close() }
            let (daemon, notify, socketPath) = try notifiedDaemon(world)
            let ready = try notify.await("READY=1") { $0.contains("READY=1") }
            // No retry: at READY the socket must already answer.
            let peer = try RawPeer(path: socketPath)
            defer { peer.close() }
            #expect(try peer.call("mediator", "ping")["result"] == .object([:]))
            #expect(ready.contains("STATUS=0 connections, 0 targets, 0 calls served"), "\(ready)")

            daemon.signal(SIGTERM)
            let stopping = try notify.await("STOPPING=1") { $0.contains("STOPPING=1") }
            #expect(stopping.contains("STOPPING=1"))
            #expect(try daemon.waitForExit() == .exited(0))
        }

        @Test("A re-exec says RELOADING=1, then the new image READY=1 (with --wait-for-boot-components too), and the watchdog beats on")
        func reexecNotifies() throws {
            let world = try World()
            defer { world.close() }
            let (_, notify, socketPath) = try notifiedDaemon(
                world, environment: ["WATCHDOG_USEC": "2000000"], arguments: ["--wait-for-boot-components"])
            _ = try notify.await("READY=1") { $0.contains("READY=1") }
            let peer = try RawPeer(path: socketPath)
            defer { peer.close() }
            for round in 1...2 {
                let id = try peer.request("mediator", "reexec")
                _ = try notify.await("RELOADING=1") { $0.contains("RELOADING=1") }
                let ready = try notify.await("READY=1 from the new image") { $0.contains("READY=1") }
                #expect(ready.contains("STATUS=1 connections"), "\(ready)")
                #expect(try peer.response(to: id, within: .seconds(20))["result"]?["reexecs"] == .int(Int64(round)))
            }
            _ = try notify.await("WATCHDOG=1 from the new image", within: .seconds(3)) { $0 == "WATCHDOG=1" }
        }

        @Test("With WATCHDOG_USEC the daemon sends WATCHDOG=1 at about half the interval")
        func watchdogPings() throws {
            let world = try World()
            defer { world.close() }
            let (_, notify, _) = try notifiedDaemon(world, environment: ["WATCHDOG_USEC": "300000"])
            _ = try notify.await("READY=1") { $0.contains("READY=1") }
            let start = ContinuousClock.now
            for _ in 0..<4 { _ = try notify.await("WATCHDOG=1", within: .seconds(2)) { $0 == "WATCHDOG=1" } }
            // Four beats at 150 ms take at least 450 ms, and far less than the 1.2 s of a 300 ms cadence.
            let elapsed = ContinuousClock.now - start
            #expect(elapsed < .milliseconds(1100), "\(elapsed)")
        }

        @Test("SIGHUP: RELOADING=1 then READY=1, new limits apply, and no connection is dropped")
        func reloadKeepsConnections() throws {
            let world = try World()
            defer { world.close() }
            let config = world.directory.file("mediatord.json")
            try #"{"default_timeout_ms": 20000}"#.write(toFile: config, atomically: true, encoding: .utf8)
            let (daemon, notify, socketPath) = try notifiedDaemon(world, arguments: ["--config", config])
            _ = try notify.await("READY=1") { $0.contains("READY=1") }
            let component = try RawPeer(path: socketPath)
            defer { component.close() }
            let registered = try component.register("Quiet", actions: ["wait"])
            let caller = try RawPeer(path: socketPath)
            defer { caller.close() }

            try #"{"default_timeout_ms": 300}"#.write(toFile: config, atomically: true, encoding: .utf8)
            daemon.signal(SIGHUP)
            _ = try notify.await("RELOADING=1") { $0.contains("RELOADING=1") && $0.contains("MONOTONIC_USEC=") }
            _ = try notify.await("READY=1 after the reload") { $0.contains("READY=1") }

            // The same connections still work, under the new default timeout.
            let started = ContinuousClock.now
            let reply = try caller.call("Quiet", "wait", within: .seconds(5))
            #expect(reply.errorCode == "timeout", "\(reply.jsonText)")
            #expect(ContinuousClock.now - started < .seconds(3))
            let listed = try caller.result("mediator", "list")
            let instance = listed["targets"]?.arrayValue?.first?["instances"]?.arrayValue?.first?["instance"]
            #expect(instance == registered["instance"])
        }

        @Test("SIGHUP with metrics_listen changed: a notice that it applies at the next start; the endpoint stays")
        func reloadNamesStartOnlyMembers() throws {
            let world = try World()
            defer { world.close() }
            let config = world.directory.file("mediatord.json")
            let first = world.directory.socket("metrics-1")
            try #"{"metrics_listen": "\#(first)"}"#.write(toFile: config, atomically: true, encoding: .utf8)
            let (daemon, notify, _) = try notifiedDaemon(world, arguments: ["--config", config])
            _ = try notify.await("READY=1") { $0.contains("READY=1") }
            try #"{"metrics_listen": "\#(world.directory.socket("metrics-2"))"}"#.write(toFile: config, atomically: true, encoding: .utf8)
            daemon.signal(SIGHUP)
            _ = try notify.await("READY=1 after the reload") { $0.contains("READY=1") }
            try waitUntil("the notice\(daemon.logTail())") {
                daemon.stderr.contains("config member metrics_listen changed; it is read at start only")
            }
            #expect(FileManager.default.fileExists(atPath: first), "the endpoint stays where it was")
        }

        @Test("A bad config on SIGHUP is reported; the daemon keeps its settings and serves on")
        func badReloadKeepsRunning() throws {
            let world = try World()
            defer { world.close() }
            let config = world.directory.file("mediatord.json")
            try #"{"max_connections": 10}"#.write(toFile: config, atomically: true, encoding: .utf8)
            let (daemon, notify, socketPath) = try notifiedDaemon(world, arguments: ["--config", config])
            _ = try notify.await("READY=1") { $0.contains("READY=1") }
            try #"{"max_connections": "many"}"#.write(toFile: config, atomically: true, encoding: .utf8)
            daemon.signal(SIGHUP)
            let ready = try notify.await("READY=1 after the failed reload") { $0.contains("READY=1") }
            #expect(ready.contains("reload failed"), "\(ready)")
            let peer = try RawPeer(path: socketPath)
            defer { peer.close() }
            #expect(try peer.call("mediator", "ping")["result"] == .object([:]))
        }

        static let socketActivate = "/usr/bin/systemd-socket-activate"

        @Test("Socket activation: the passed socket named mediator is adopted and never unlinked")
        func socketActivation() throws {
            let world = try World()
            defer { world.close() }
            let socketPath = world.directory.socket("activated")
            let activator = try world.spawn(
                Self.socketActivate, ["-l", socketPath, "--fdname=mediator", Paths.mediatord, "--log-level", "debug"],
                label: "activate")
            // systemd-socket-activate listens first and starts mediatord on the first connection.
            try waitUntil("the activation socket") { FileManager.default.fileExists(atPath: socketPath) }
            let peer = try RawPeer.connect(socketPath)
            defer { peer.close() }
            #expect(try peer.call("mediator", "ping")["result"] == .object([:]))
            activator.signal(SIGTERM)
            #expect(try activator.waitForExit() == .exited(0))
            #expect(FileManager.default.fileExists(atPath: socketPath), "mediatord removed a socket it did not create")
            #expect(activator.logTail(1_000_000).contains("socket-activated fd 3"), "\(activator.logTail())")
        }

        @Test("Socket activation with sockets none of which is named mediator: a clear error, exit 1")
        func socketActivationWrongName() throws {
            let world = try World()
            defer { world.close() }
            let first = world.directory.socket("a")
            let second = world.directory.socket("b")
            let activator = try world.spawn(
                Self.socketActivate, ["-l", first, "-l", second, "--fdname=one:two", Paths.mediatord],
                label: "activate")
            try waitUntil("the activation sockets") { FileManager.default.fileExists(atPath: first) }
            let peer = try? RawPeer(path: first)
            defer { peer?.close() }
            #expect(try activator.waitForExit() == .exited(1))
            #expect(activator.logTail(1_000_000).contains("none is named \"mediator\""), "\(activator.logTail())")
        }

        // KillMode=process leaves the components to the daemon (docs/systemd.md,
        // "Managed components across a restart"): its stop must end them.
        @Test("Under systemd a stop ends the managed components itself: SIGTERM, SIGKILL after the grace, waited for")
        func stopEndsManagedComponents() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            // A wrapper that ignores SIGTERM (and so does the sleep it runs
            // after Notes ends): only the SIGKILL ends its process group.
            let notes = [Paths.python, "-u", Paths.notesComponent, "--target", "Stubborn"].map { "'\($0)'" }.joined(separator: " ")
            _ = try folder.write("stubborn.json", folder.notes("Stubborn", [
                "exec": ["/bin/sh", "-c", .string("trap '' TERM; \(notes); sleep 60")],
            ]))
            let (daemon, notify, socketPath) = try notifiedDaemon(world, arguments: ["--components", folder.path])
            _ = try notify.await("READY=1") { $0.contains("READY=1") }
            let peer = try RawPeer(path: socketPath)
            defer { peer.close() }
            _ = try peer.result("Stubborn", "whoami", within: .seconds(20))
            let shell = try #require(try peer.result("mediator", "status", params: ["target": "Stubborn"])["pids"]?.arrayValue?.first?.intValue)

            let asked = ContinuousClock.now
            daemon.signal(SIGTERM)
            #expect(try daemon.waitForExit(within: .seconds(15)) == .exited(0))
            let took = ContinuousClock.now - asked
            #expect(took >= .seconds(5), "it waited for the grace: \(took)")
            // Waited for, so reaped: no zombie, nothing left.
            #expect(kill(pid_t(shell), 0) != 0 && errno == ESRCH, "the wrapper \(shell) still exists")
            let log = daemon.logTail(1_000_000)
            #expect(log.contains("outlived the grace; SIGKILL"), "\(daemon.logTail())")
        }
    }
}
