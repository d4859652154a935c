import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// Two mediatord "hosts" on one machine, bridged by a real nats-server
    /// on a random loopback port (issue 14, docs/scale-out.md).
    @Suite("Other hosts through NATS", .enabled(if: NATSServer.executable != nil, "nats-server is not installed"))
    struct NATSBridge {
        /// A config file whose `"nats"` member has `members` and a 200 ms
        /// announce interval, so that the tests wait little.
        static func config(_ world: World, _ name: String = "nats.json", members: String = "") throws -> String {
            let path = world.directory.file(name)
            let extra = members.isEmpty ? "" : ", " + members
            try Data(#"{"nats": {"announce_interval_ms": 200\#(extra)}}"#.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }

        /// A daemon named `host` bridged to `nats`, on its own socket.
        static func host(
            _ world: World, _ nats: NATSServer, _ host: String, _ flags: [String], config: String? = nil
        ) throws -> DaemonProcess {
            let config = try config ?? Self.config(world)
            return try world.daemon(
                ["--config", config, "--nats-url", nats.url, "--nats-host", host] + flags,
                socketPath: world.directory.socket(host))
        }

        /// Host A imports everything, host B exports everything.
        static func hosts(_ world: World, _ nats: NATSServer) throws -> (a: DaemonProcess, b: DaemonProcess) {
            (try host(world, nats, "hostA", ["--nats-import", "*"]), try host(world, nats, "hostB", ["--nats-export", "*"]))
        }

        /// Runs `body` in a new world with a nats-server and ``hosts(_:_:)``;
        /// closing the world stops them all.
        static func withHosts(_ body: (World, NATSServer, DaemonProcess, DaemonProcess) throws -> Void) throws {
            let world = try World()
            defer { world.close() }
            let nats = try NATSServer(world)
            let (a, b) = try hosts(world, nats)
            try body(world, nats, a, b)
        }

        @Test("A component on host B is called from host A by mediatorctl: results, errors, timeouts, describe")
        func callsAcrossHosts() throws {
            try Self.withHosts { world, nats, a, b in
                let notes = try world.notes(b)
                try a.waitForTarget("Notes")
                // Listed on A as served on B.
                let listed = try a.listing("Notes")?["instances"]?.arrayValue ?? []
                #expect(listed.map { $0["remote_host"] } == ["hostB"], "\(listed)")

                let cli = CLI(a)
                let added = try cli.json("call", ["Notes", "add", "text=from A"])
                #expect(added["id"] != nil, "\(added)")
                let got = try cli.json("call", ["Notes", "get", "id=\(added["id"]?.intValue ?? 0)"])
                #expect(got["text"] == "from A", "\(got)")
                // The component's own error, code unchanged.
                let missing = try cli.run("call", ["Notes", "get", "id=404"])
                #expect(missing.status == 1 && missing.stderr.hasPrefix("mediatorctl: not_found: "), "\(missing)")
                // The timeout is the caller's, carried to host B.
                let late = try cli.run("call", ["Notes", "sleep", "ms=30000", "--timeout", "0.5"])
                #expect(late.status == 1 && late.stderr.hasPrefix("mediatorctl: timeout: "), "\(late)")
                // describe on A shows B's specs.
                let described = try cli.json("describe", ["Notes"])
                let actions = described["actions"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
                #expect(actions.contains("add") && actions.contains("sleep"), "\(described)")
                // The process that answered is the component on B.
                let whoami = try cli.json("call", ["Notes", "whoami"])
                #expect(whoami["pid"]?.intValue == Int64(notes.pid), "\(whoami)")
            }
        }

        @Test("NATS going away fails imported calls at once with component_unavailable; they work again after it is back")
        func natsRestart() throws {
            try Self.withHosts { world, nats, a, b in
                _ = try world.notes(b)
                try a.waitForTarget("Notes")
                let cli = CLI(a)
                _ = try cli.json("call", ["Notes", "echo", "x=1"])

                nats.stop()
                let started = ContinuousClock.now
                let failed = try cli.run("call", ["Notes", "echo", "x=2", "--timeout", "10"])
                let took = ContinuousClock.now - started
                #expect(failed.status == 1, "\(failed)")
                #expect(failed.stderr.hasPrefix("mediatorctl: component_unavailable: ")
                        || failed.stderr.hasPrefix("mediatorctl: target_not_found: "), "\(failed)")
                #expect(took < .seconds(5), "failed in \(took), not at once")

                try nats.start()
                try waitUntil("calls from A to work again", within: .seconds(20)) {
                    try cli.run("call", ["Notes", "echo", "x=3"]).status == 0
                }
            }
        }

        @Test("Streams: each partial result crosses as it comes; the Swift library's typed client; a crash mid-call and a cancel reach the caller and host B")
        func streamsCrashesAndCancels() throws {
            try Self.withHosts { world, nats, a, b in
                _ = try world.swiftExample(b)
                try a.waitForTarget("Weather")

                // A countdown 3, 2, 1 with 400 ms between: the first partial is not held back.
                let peer = try world.peer(a)
                let started = ContinuousClock.now
                let id = try peer.request("Weather", "countdown", params: ["from": 3, "interval_ms": 400], more: true)
                let first = try peer.response(to: id, within: .seconds(10))
                let firstAfter = ContinuousClock.now - started
                #expect(first["result"] == 3 && first["continues"] == true, "\(first)")
                var partials = [first["result"]]
                var final: JSONValue = .null
                while true {
                    let next = try peer.response(to: id, within: .seconds(10))
                    if next["continues"] == true { partials.append(next["result"]) } else { final = next; break }
                }
                let total = ContinuousClock.now - started
                #expect(partials == [3, 2, 1], "\(partials)")
                #expect(final["result"] == ["done": true], "\(final)")
                #expect(total - firstAfter >= .milliseconds(700), "the first partial came \(firstAfter) in, the end \(total)")

                // The Swift library from host A: the generated typed client calls forecast and streams countdown.
                let typed = try ChildProcess.run(Paths.typedClient, ["--socket", a.socketPath, "--from", "2"], within: .seconds(30))
                #expect(typed.status == 0, "\(typed)")
                #expect(typed.stdout.contains("Oslo"), "\(typed)")

                // The component dies mid-call on host B: the caller on A gets B's daemon's answer.
                let crash = try CLI(a).run("call", ["Weather", "crash"])
                #expect(crash.status == 1 && crash.stderr.hasPrefix("mediatorctl: component_unavailable: "), "\(crash)")

                // A call given up on A is cancelled on B too: not left running for 30 s.
                _ = try world.swiftExample(b)
                try waitUntil("host A's calls to reach the new Weather on B") {
                    try CLI(a).run("call", ["Weather", "slow", "ms=1"]).status == 0
                }
                let late = try CLI(a).run("call", ["Weather", "slow", "ms=30000", "--timeout", "0.5"])
                #expect(late.status == 1 && late.stderr.hasPrefix("mediatorctl: timeout: "), "\(late)")
                try waitUntil("the call on B to end", within: .seconds(5)) {
                    try b.listing("Weather")?["instances"]?.arrayValue?.first?["in_flight"] == 0
                }
            }
        }

        @Test("A pool across hosts: calls from host C reach the instances on A and B")
        func poolAcrossHosts() throws {
            let world = try World()
            defer { world.close() }
            let nats = try NATSServer(world)
            defer { nats.stop() }
            let a = try Self.host(world, nats, "hostA", ["--nats-export", "Notes"])
            let b = try Self.host(world, nats, "hostB", ["--nats-export", "Notes"])
            let c = try Self.host(world, nats, "hostC", ["--nats-import", "Notes"])
            let onA = try world.notes(a)
            let onB = try world.notes(b)
            // Both hosts serve it on NATS (each says so in its log), and C stands in for it.
            for host in [a, b] {
                try waitUntil("Notes exported\(host.process.logTail())") { host.process.stderr.contains("exporting Notes over NATS") }
            }
            try c.waitForTarget("Notes")
            let peer = try world.peer(c)
            var pids: Set<Int64> = []
            for _ in 0..<200 {
                if let pid = try peer.result("Notes", "whoami")["pid"]?.intValue { pids.insert(pid) }
                if pids.count == 2 { break }
            }
            #expect(pids == [Int64(onA.pid), Int64(onB.pid)], "\(pids)")
        }

        @Test("nats-server stopped and started under load: every call gets exactly one answer")
        func natsRestartUnderLoad() throws {
            try Self.withHosts { world, nats, a, b in
                _ = try world.notes(b)
                try a.waitForTarget("Notes")
                let peer = try world.peer(a)
                var ids: [JSONValue] = []
                for round in 0..<3 {
                    for index in 0..<100 {
                        ids.append(try peer.request("Notes", "sleep", params: ["ms": .int(Int64(index % 20))], timeoutMs: 5000))
                    }
                    if round == 0 { nats.stop() }
                    if round == 1 { try nats.start() }
                }
                var answers: [JSONValue: Int] = [:]
                for _ in ids {
                    let message = try peer.receive(within: .seconds(20)) { $0.isResponse }
                    answers[message["id"] ?? .null, default: 0] += 1
                }
                #expect(Set(answers.keys) == Set(ids))
                #expect(answers.values.allSatisfy { $0 == 1 }, "\(answers.filter { $0.value != 1 })")
                // Nothing more arrives late.
                #expect(throws: (any Error).self) { _ = try peer.receive(within: .milliseconds(500)) { $0.isResponse } }
            }
        }

        @Test("Events: chosen patterns cross hosts both ways, once each, without looping; others and mediator.* stay")
        func eventsAcrossHosts() throws {
            let world = try World()
            defer { world.close() }
            let nats = try NATSServer(world)
            defer { nats.stop() }
            let config = try Self.config(world, members: #""events": ["user.*"]"#)
            let a = try Self.host(world, nats, "hostA", [], config: config)
            let b = try Self.host(world, nats, "hostB", [], config: config)
            // Both bridges are up once each has subscribed to its daemon's events.
            for host in [a, b] {
                try waitUntil("the bridge up\(host.process.logTail())") { host.process.stderr.contains("NATS bridge up") }
            }
            let onA = try world.peer(a), onB = try world.peer(b)
            for peer in [onA, onB] { _ = try peer.result("mediator", "subscribe", params: ["events": ["*"]]) }
            // The bridge subscribes to NATS just after it says it is up: retry the first event until it crosses.
            let publisher = try world.peer(b)
            try waitUntil("a first event to cross") {
                _ = try publisher.result("mediator", "publish", params: ["event": "user.ping"])
                return (try? onA.event("user.ping", within: .milliseconds(200))) != nil
            }
            while (try? onB.event("user.ping", within: .milliseconds(100))) != nil {}
            while (try? onA.event("user.ping", within: .milliseconds(100))) != nil {}

            _ = try publisher.result("mediator", "publish", params: ["event": "user.login", "data": ["who": "ann"]])
            _ = try publisher.result("mediator", "publish", params: ["event": "other.thing"])
            let seenOnA = try onA.event("user.login")
            #expect(seenOnA["data"] == ["who": "ann"], "\(seenOnA)")
            #expect(try onB.event("user.login")["data"] == ["who": "ann"])
            // And back from A to B, once.
            _ = try world.peer(a).result("mediator", "publish", params: ["event": "user.logout"])
            #expect(try onB.event("user.logout")["event"] == "user.logout")
            #expect(try onA.event("user.logout")["event"] == "user.logout")
            // Nothing twice, nothing not chosen.
            let extraOnA = (try? onA.receive(within: .milliseconds(600)) { $0["event"] != nil && !($0["event"]?.stringValue?.hasPrefix("mediator.") ?? false) })
            let extraOnB = (try? onB.receive(within: .milliseconds(300)) { $0["event"] != nil && $0["event"] != "other.thing" && !($0["event"]?.stringValue?.hasPrefix("mediator.") ?? false) })
            #expect(extraOnA == nil, "\(String(describing: extraOnA))")
            #expect(extraOnB == nil, "\(String(describing: extraOnB))")
        }

        @Test("Identity and policy: B's component sees who called on A; B's policy grants or refuses remote callers by host")
        func remoteCallersAndPolicy() throws {
            let world = try World()
            defer { world.close() }
            let nats = try NATSServer(world)
            defer { nats.stop() }
            // B's policy: remote callers from hostA may call Weather/echo only.
            let policy = world.directory.file("policy-b")
            try FileManager.default.createDirectory(atPath: policy, withIntermediateDirectories: true)
            try Data(#"{"rules": [{"match": {"host": "hostA"}, "allow": {"call": ["Weather/echo"]}}]}"#.utf8)
                .write(to: URL(fileURLWithPath: policy + "/remote.json"))
            let a = try Self.host(world, nats, "hostA", ["--nats-import", "*"])
            let b = try Self.host(world, nats, "hostB", ["--nats-export", "*", "--policy", policy])
            _ = try world.swiftExample(b)
            try a.waitForTarget("Weather")

            let peer = try world.peer(a)
            _ = try peer.result("mediator", "hello", params: ["protocol": 1, "name": "caller-on-a"])
            let echoed = try peer.result("Weather", "echo", params: ["text": "hi"])
            let remote = echoed["caller"]?["remote"]
            #expect(remote?["host"] == "hostA", "\(echoed)")
            #expect(remote?["uid"]?.intValue == Int64(getuid()), "\(echoed)")
            #expect(remote?["pid"]?.intValue == Int64(getpid()), "\(echoed)")
            #expect(remote?["name"] == "caller-on-a", "\(echoed)")
            // Not granted to remote callers on B: refused there, and the refusal arrives on A.
            let refused = try peer.call("Weather", "forecast", params: ["city": "Oslo", "days": 1])
            #expect(refused["error"]?["code"] == "forbidden", "\(refused)")
            #expect(refused["error"]?["message"]?.stringValue?.contains("hostA") == true, "\(refused)")
            // Nobody else may claim to speak for another host.
            let liar = try world.peer(b)
            let id = try liar.request("Weather", "echo", params: [:], extra: ["remote_caller": ["host": "hostA", "uid": 0, "pid": 1]])
            #expect(try liar.response(to: id)["error"]?["code"] == "forbidden")
        }

        @Test("SIGHUP: NATS settings in the config file turn the bridge on, change it and turn it off")
        func reloadTurnsTheBridgeOnAndOff() throws {
            let world = try World()
            defer { world.close() }
            let nats = try NATSServer(world)
            defer { nats.stop() }
            let b = try Self.host(world, nats, "hostB", ["--nats-export", "*"])
            _ = try world.notes(b)
            let config = world.directory.file("a.json")
            func write(_ text: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: config)) }
            try write("{}")
            let a = try world.daemon(["--config", config, "--nats-host", "hostA"], socketPath: world.directory.socket("a2"))
            #expect(try a.listing("Notes") == nil)

            try write(#"{"nats": {"urls": ["\#(nats.url)"], "import": ["Notes"], "announce_interval_ms": 200}}"#)
            a.process.signal(SIGHUP)
            try a.waitForTarget("Notes")
            #expect(try CLI(a).json("call", ["Notes", "echo", "x=1"])["x"] == 1)

            // Importing something else: the stand-in for Notes goes.
            try write(#"{"nats": {"urls": ["\#(nats.url)"], "import": ["Other"], "announce_interval_ms": 200}}"#)
            a.process.signal(SIGHUP)
            try a.waitForTargetGone("Notes")

            // A bad "nats" member: logged, and the running settings stay.
            try write(#"{"nats": {"urls": ["http://nope"]}}"#)
            a.process.signal(SIGHUP)
            try waitUntil("the reload to be refused\(a.process.logTail())") { a.process.stderr.contains("reload failed") }
            try a.waitUntilReady()
        }

        @Test("A local instance wins; the stand-in for host B's takes the calls when it is gone")
        func localInstanceWins() throws {
            try Self.withHosts { world, nats, a, b in
                let local = try world.notes(a)
                let remote = try world.notes(b)
                // Host A: its own instance, and the stand-in for B's.
                try a.waitForTarget("Notes", instances: 2)
                let instances = try a.listing("Notes")?["instances"]?.arrayValue ?? []
                #expect(instances.compactMap { $0["remote_host"]?.stringValue } == ["hostB"], "\(instances)")
                let cli = CLI(a)
                for _ in 0..<3 {
                    #expect(try cli.json("call", ["Notes", "whoami"])["pid"]?.intValue == Int64(local.pid))
                }
                local.kill()
                try a.waitForTarget("Notes", instances: 1)
                try waitUntil("host A's calls to reach host B") {
                    try cli.json("call", ["Notes", "whoami"])["pid"]?.intValue == Int64(remote.pid)
                }
            }
        }

        /// Host A imports from NATS server `natsA`, host B exports on `natsB`
        /// (the same one or another node of its cluster), with a 1 s liveness
        /// timeout and the default 2 s announce interval: a host that stops
        /// announcing is dropped only after 6 s, so an answer within the
        /// liveness timeout comes from the keep-alives stopping.
        static func livenessHosts(
            _ world: World, _ natsA: NATSServer, _ natsB: NATSServer
        ) throws -> (a: DaemonProcess, b: DaemonProcess) {
            let config = world.directory.file("liveness.json")
            try Data(#"{"nats": {"liveness_timeout_ms": 1000}}"#.utf8).write(to: URL(fileURLWithPath: config))
            return (
                try host(world, natsA, "hostA", ["--nats-import", "*"], config: config),
                try host(world, natsB, "hostB", ["--nats-export", "*"], config: config)
            )
        }

        /// Four callers on A each start a `Notes/sleep` of a minute with a
        /// 20 s timeout; once B's component has all four, `fail` takes B
        /// away. Each caller must get `component_unavailable` within a few
        /// seconds, saying that whether its call ran is unknown.
        static func expectCallsInFlightAnsweredSoon(
            _ world: World, _ a: DaemonProcess, _ b: DaemonProcess, fail: () throws -> Void
        ) throws {
            _ = try world.notes(b)
            try a.waitForTarget("Notes", within: .seconds(20))
            let callers = try (0..<4).map { _ in try world.peer(a) }
            let ids = try callers.map { try $0.request("Notes", "sleep", params: ["ms": 60000], timeoutMs: 20000) }
            try waitUntil("B's component to have the four calls") {
                try b.listing("Notes")?["instances"]?.arrayValue?.first?["in_flight"]?.intValue == 4
            }
            try fail()
            let failedAt = ContinuousClock.now
            for (caller, id) in zip(callers, ids) {
                let answer = try caller.response(to: id, within: .seconds(25))
                #expect(answer.errorCode == "component_unavailable", "\(answer.jsonText)")
                // Present and null: B may have run it, or not.
                #expect(answer["error"]?["data"]?["delivered"] == .null, "\(answer.jsonText)")
            }
            let took = ContinuousClock.now - failedAt
            // 1 s of silence, and the sweep; not the 20 s timeout nor the 6 s of announcements.
            #expect(took < .seconds(4), "answered \(took) after host B went away\(a.process.logTail())")
        }

        @Test("The serving host's mediatord killed mid-call: the calls in flight to it are answered within the liveness timeout, delivered unknown")
        func servingDaemonKilled() throws {
            let world = try World()
            defer { world.close() }
            let nats = try NATSServer(world)
            let (a, b) = try Self.livenessHosts(world, nats, nats)
            try Self.expectCallsInFlightAnsweredSoon(world, a, b) {
                // First, a call that runs longer than the liveness timeout: B's keep-alives keep it going.
                let peer = try world.peer(a)
                let long = try peer.response(to: try peer.request("Notes", "sleep", params: ["ms": 2500], timeoutMs: 20000))
                #expect(long.isResponse && long["error"] == nil, "\(long.jsonText)")
                b.kill()
            }
        }

        @Test("The serving host's NATS node killed mid-call: the calls in flight are answered within the liveness timeout; a new call is never delivered")
        func servingNATSNodeKilled() throws {
            let world = try World()
            defer { world.close() }
            let nodeA = try NATSServer(world, cluster: [])
            let nodeB = try NATSServer(world, cluster: [nodeA.clusterPort ?? 0])
            let (a, b) = try Self.livenessHosts(world, nodeA, nodeB)
            try Self.expectCallsInFlightAnsweredSoon(world, a, b) { nodeB.stop() }
            // Nobody serves Notes now: NATS has no responders (or A dropped the target), and says the call went nowhere.
            let peer = try world.peer(a)
            let answer = try peer.response(to: try peer.request("Notes", "echo", timeoutMs: 20000), within: .seconds(10))
            #expect(answer.errorCode == "target_not_found", "\(answer.jsonText)")
            #expect(answer["error"]?["data"]?["delivered"] == false, "\(answer.jsonText)")
        }
    }
}

/// Debian's nats-server on a random loopback port; `stop()` and `start()`
/// keep the port, for restarts.
final class NATSServer: @unchecked Sendable {
    static let executable = ["/usr/sbin/nats-server", "/usr/bin/nats-server"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    private let world: World
    private var process: ChildProcess?
    private(set) var port = 0
    var url: String { "nats://127.0.0.1:\(port)" }
    /// In a cluster: the port other nodes route to (nil: a single server).
    private(set) var clusterPort: Int?
    private let routes: [Int]

    /// A single server, or with `cluster`, a node of a cluster on loopback
    /// that routes to the nodes listening on `cluster` (none for the first).
    /// A node does not tell its clients of the others, so that a client stays
    /// on its node as it would on a machine of its own, and loses NATS with it.
    init(_ world: World, cluster routes: [Int]? = nil) throws {
        self.world = world
        self.routes = routes ?? []
        if routes != nil { clusterPort = 0 }
        try start()
    }

    func start() throws {
        guard let executable = Self.executable else { throw HarnessError("nats-server is not installed") }
        let directory = world.directory.file("nats-ports-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var arguments = ["-a", "127.0.0.1", "-p", port == 0 ? "-1" : String(port), "--ports_file_dir", directory]
        if let clusterPort {
            arguments += [
                "--cluster", "nats://127.0.0.1:\(clusterPort == 0 ? "-1" : String(clusterPort))",
                "--cluster_name", "mediator-tests", "--no_advertise=true",
            ]
            if !routes.isEmpty { arguments += ["--routes", routes.map { "nats://127.0.0.1:\($0)" }.joined(separator: ",")] }
        }
        let process = try world.spawn(executable, arguments, label: "nats-server")
        self.process = process
        let file = "\(directory)/nats-server_\(process.pid).ports"
        func listenPort(_ json: JSONValue, _ key: String) -> Int? {
            json[key]?.arrayValue?.first?.stringValue?.split(separator: ":").last.flatMap { Int($0) }
        }
        try waitUntil("nats-server's ports file\(process.logTail())") {
            guard let data = FileManager.default.contents(atPath: file),
                  let json = try? JSONValue.parse(String(decoding: data, as: UTF8.self)),
                  let port = listenPort(json, "nats")
            else { return false }
            if clusterPort != nil {
                guard let routed = listenPort(json, "cluster") else { return false }
                clusterPort = routed
            }
            self.port = port
            return true
        }
    }

    func stop() {
        process?.kill()
        process = nil
    }
}
