import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// `max_queued_bytes_per_uid` with real sockets: what the kernel does not
    /// take piles up in the daemon, and the daemon measures it. uid 0 is
    /// exempt, so the peer that does not read runs as nobody (the test must
    /// run as root to start it so).
    @Suite("Queued bytes quota")
    struct QueuedBytesQuotaTests {
        static let quota = 262_144

        /// A Python peer, run as nobody: `sink` registers a target and never
        /// reads again; `flood` calls a target every few ms and never reads
        /// its answers, until the daemon hangs up on it.
        static let script = #"""
            import json, socket, sys, time
            path, mode, target = sys.argv[1], sys.argv[2], sys.argv[3]
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            def send(message):
                s.sendall(json.dumps(message).encode() + b"\n")
            if mode == "sink":
                send({"id": 1, "target": "mediator", "action": "register", "params": {"target": target, "actions": ["take"]}})
                line = b""
                while not line.endswith(b"\n"):
                    chunk = s.recv(1)
                    if not chunk:
                        sys.exit("closed before the register answer")
                    line += chunk
                if "result" not in json.loads(line):
                    sys.exit("register failed: %r" % line)
                print("ready", flush=True)
                time.sleep(3600)
            else:
                print("ready", flush=True)
                try:
                    for n in range(1, 4001):
                        send({"id": n, "target": target, "action": "get", "timeout_ms": 60000})
                        time.sleep(0.005)
                except OSError as error:
                    print("disconnected", flush=True)
                    sys.exit(0)
                print("still connected", flush=True)
                sys.exit(1)
            """#

        /// A daemon with the quota, a per-connection limit far above it (so
        /// that only the quota can refuse), and a policy that lets nobody
        /// register and call (root may do anything whatever the policy).
        static func daemon(_ world: World) throws -> DaemonProcess {
            let policy = world.directory.file("policy.d")
            try FileManager.default.createDirectory(atPath: policy, withIntermediateDirectories: true)
            try #"{"rules": [{"match": {"uid": 65534}, "allow": {"register": ["Sink"], "call": ["*/*"]}}]}"#
                .write(toFile: policy + "/10-nobody.json", atomically: true, encoding: .utf8)
            return try world.daemon([
                "--max-queued-bytes-per-uid", "\(quota)", "--max-outbound-bytes", "\(64 << 20)", "--policy", policy,
            ])
        }

        /// Starts the script as nobody, waits for its `ready` line.
        static func startAsNobody(_ world: World, _ daemon: DaemonProcess, mode: String, target: String) throws -> ChildProcess {
            // The unprivileged user must reach the socket and the script in the test's folder.
            chmod(world.directory.path, 0o755)
            let path = world.directory.file("peer.py")
            if !FileManager.default.fileExists(atPath: path) {
                try script.write(toFile: path, atomically: true, encoding: .utf8)
            }
            let process = try world.spawn(
                "/usr/bin/setpriv",
                ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-u", path, daemon.socketPath, mode, target],
                label: "\(mode)-as-nobody")
            try process.waitForLine("ready", within: .seconds(15))
            return process
        }

        @Test(
            "Calls toward a uid whose component does not read are refused naming the quota; others are served",
            .enabled(if: getuid() == 0, "changing users needs root"))
        func callsTowardAStalledUIDAreRefused() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try Self.daemon(world)
            _ = try Self.startAsNobody(world, daemon, mode: "sink", target: "Sink")
            let caller = try world.peer(daemon)
            let bystander = try world.peer(daemon)
            let echo = try world.peer(daemon)
            _ = try echo.register("Echo", actions: ["say"])
            let blob = JSONValue.string(String(repeating: "x", count: 65536))

            // Each call is followed by a ping on the same connection: a refusal
            // comes before the ping's answer, a routed call brings nothing
            // (the sink never answers, and the timeout is far away).
            var routed = 0
            var refusal: JSONValue?
            for _ in 0..<400 {
                let id = try caller.request("Sink", "take", params: ["blob": blob], timeoutMs: 120_000)
                let ping = try caller.request("mediator", "ping")
                let next = try caller.receive(within: .seconds(5))
                if next["id"] == id {
                    refusal = next
                    #expect(try caller.receive(within: .seconds(5))["id"] == ping)
                    break
                }
                try #require(next["id"] == ping, "unexpected: \(next.jsonText)\(daemon.process.logTail())")
                routed += 1
                if routed % 10 == 0 { _ = try bystander.result("mediator", "ping", within: .seconds(2)) }
            }
            let answer = try #require(refusal, "no call was refused after \(routed) calls\(daemon.process.logTail())")
            #expect(answer.errorCode == "overloaded", "\(answer.jsonText)")
            #expect(answer["error"]?["data"] == ["quota": "max_queued_bytes_per_uid", "limit": .int(Int64(Self.quota)), "delivered": false])
            #expect(
                answer["error"]?["message"]?.stringValue?.hasPrefix(
                    "uid 65534 reached its quota max_queued_bytes_per_uid = \(Self.quota)") == true,
                "\(answer.jsonText)")
            // Calls went through until the backlog passed the quota (the kernel takes some first).
            #expect(routed * 65536 >= Self.quota, "refused after only \(routed) calls")

            // Everyone else is still served, the sink is still registered (refusing
            // kept it under the ceiling), and the daemon is up.
            _ = try bystander.result("mediator", "ping", within: .seconds(2))
            let call = try caller.request("Echo", "say", params: ["text": "hi"])
            let request = try echo.incomingRequest(within: .seconds(5))
            try echo.reply(to: request, result: ["text": "hi"])
            #expect(try caller.response(to: call, within: .seconds(5))["result"] == ["text": "hi"])
            #expect(try daemon.listing("Sink") != nil, "the sink was disconnected\(daemon.process.logTail())")
            #expect(daemon.process.isRunning)
            // The log names the culprit once, not per refused call.
            try waitUntil("the quota warning in the log\(daemon.process.logTail())", within: .seconds(5)) {
                daemon.process.stderr.contains("quota reached")
            }
            let warnings = daemon.process.stderrLines.filter { $0.contains("quota reached") }
            #expect(warnings.count == 1, "\(warnings)")
            #expect(warnings.first?.contains("uid=65534") == true, "\(warnings)")
            #expect(warnings.first?.contains("exe=/usr/bin/python3") == true, "\(warnings)")
        }

        @Test(
            "A caller that does not read its answers is disconnected at twice the quota; the daemon stays up",
            .enabled(if: getuid() == 0, "changing users needs root"))
        func aCallerThatDoesNotReadIsDisconnectedAtTheCeiling() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try Self.daemon(world)
            let big = try world.peer(daemon)
            _ = try big.register("Big", actions: ["get"])
            let bystander = try world.peer(daemon)
            let flood = try Self.startAsNobody(world, daemon, mode: "flood", target: "Big")
            let answer: JSONValue = ["blob": .string(String(repeating: "y", count: 131_072))]

            // Answer every call with 128 KiB until the flooding caller is gone.
            var answered = 0
            let deadline = ContinuousClock.now + .seconds(30)
            while flood.isRunning, answered < 2000, ContinuousClock.now < deadline {
                guard let request = try? big.incomingRequest(within: .milliseconds(200)) else { continue }
                try big.reply(to: request, result: answer)
                answered += 1
            }
            let ended = try flood.waitForExit(within: .seconds(15))
            #expect(ended == .exited(0), "\(flood.logTail())")
            #expect(flood.stdoutLines.last == "disconnected", "\(flood.logTail())")
            // The quota plus the ceiling and the kernel's buffers: far less than 2000 answers.
            #expect(answered < 200, "disconnected only after \(answered) answers of 128 KiB")

            _ = try bystander.result("mediator", "ping", within: .seconds(2))
            #expect(try daemon.listing("Big") != nil, "uid 0's component is exempt")
            #expect(daemon.process.isRunning)
            try waitUntil("the disconnection in the log\(daemon.process.logTail())", within: .seconds(5)) {
                daemon.process.stderrLines.contains { line in
                    line.contains("passed twice the quota") && line.contains("uid=65534")
                        && line.contains("quota=max_queued_bytes_per_uid") && line.contains("pid=")
                }
            }
        }
    }
}
