import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The NATS bridge against hostile or careless settings and peers (issue 23).
extension Integration.NATSBridge {
    /// A loopback URL where nothing listens: a server's port, the server stopped.
    static func deadURL(_ world: World) throws -> String {
        let probe = try NATSServer(world)
        let url = probe.url
        probe.stop()
        return url
    }

    @Test("--nats-url takes a comma-separated list as NATS clients do; a bad list is refused at start; a bridge that cannot connect says why")
    func urlListsAndConnectFailures() throws {
        let world = try World()
        defer { world.close() }
        let nats = try NATSServer(world)
        defer { nats.stop() }
        let dead = try Self.deadURL(world)
        let b = try Self.host(world, nats, "hostB", ["--nats-export", "*"])
        _ = try world.notes(b)
        // The first server of the list is down: the second one serves.
        let a = try world.daemon(
            ["--config", try Self.config(world), "--nats-url", "\(dead), \(nats.url)", "--nats-host", "hostA", "--nats-import", "*"],
            socketPath: world.directory.socket("hostA"))
        try a.waitForTarget("Notes")
        #expect(try CLI(a).json("call", ["Notes", "echo", "x=1"])["x"] == 1)

        // A list with an empty piece, or a URL without a usable port: refused at start, clearly.
        for bad in ["\(nats.url),", "nats://127.0.0.1:port"] {
            let refused = try ChildProcess.run(
                Paths.mediatord, ["--socket", world.directory.socket("refused"), "--nats-url", bad], within: .seconds(20))
            #expect(refused.status != 0, "\(refused)")
            #expect(refused.stderr.contains("NATS options: ") && refused.stderr.contains("expected nats://HOST:PORT"), "\(refused)")
        }

        // Nothing listens: the daemon runs, and its log says why the bridge has no NATS.
        let alone = try world.daemon(
            ["--config", try Self.config(world), "--nats-url", dead, "--nats-host", "alone", "--nats-import", "*"],
            socketPath: world.directory.socket("alone"))
        try waitUntil("the bridge to say why it has no NATS\(alone.process.logTail())") {
            alone.process.stderr.contains("NATS not reachable") && alone.process.stderr.contains("No server available")
        }
    }
}

extension Integration.NATSBridge {
    @Test("Two daemons on one machine and one NATS, without --nats-host: each has its own name and sees the other's targets; a shared name is logged as an error")
    func hostNamesPerDaemonInstance() throws {
        let world = try World()
        defer { world.close() }
        let nats = try NATSServer(world)
        defer { nats.stop() }
        let config = try Self.config(world)
        let a = try world.daemon(
            ["--config", config, "--nats-url", nats.url, "--nats-import", "*"], socketPath: world.directory.socket("a"))
        let b = try world.daemon(
            ["--config", config, "--nats-url", nats.url, "--nats-export", "*"], socketPath: world.directory.socket("b"))
        _ = try world.notes(b)
        try a.waitForTarget("Notes")
        let host = try a.listing("Notes")?["instances"]?.arrayValue?.first?["remote_host"]?.stringValue
        #expect(host?.hasSuffix(":" + b.socketPath) == true, "\(String(describing: host))")
        #expect(try CLI(a).json("call", ["Notes", "echo", "x=1"])["x"] == 1)

        // The same name given to two daemons: both say so.
        let c = try world.daemon(
            ["--config", config, "--nats-url", nats.url, "--nats-host", "same"], socketPath: world.directory.socket("c"))
        let d = try world.daemon(
            ["--config", config, "--nats-url", nats.url, "--nats-host", "same"], socketPath: world.directory.socket("d"))
        for daemon in [c, d] {
            try waitUntil("the name clash to be logged\(daemon.process.logTail())") {
                daemon.process.stderr.contains("another Mediator daemon announces this host's name")
            }
        }
    }
}

extension Integration.NATSBridge {
    static var hostilePeer: String { Paths.packageRoot + "/Tests/Support/NATSPeer/hostile_nats_peer.py" }

    /// `mediator/stats`'s `"nats"` member on `daemon`.
    static func natsStats(_ daemon: DaemonProcess) throws -> JSONValue {
        try CLI(daemon).json("stats")["nats"] ?? .null
    }

    static func occurrences(_ text: String, in log: String) -> Int { log.components(separatedBy: text).count - 1 }

    /// An importer for the flood tests: the default announce interval, so
    /// that a host stays known for 6 s between announcements even on a busy
    /// machine (an episode of refusals then has one start, logged once).
    static func importer(_ world: World, _ nats: NATSServer, _ flags: [String] = []) throws -> DaemonProcess {
        let config = world.directory.file("importer.json")
        try Data(#"{"nats": {"announce_interval_ms": 2000}}"#.utf8).write(to: URL(fileURLWithPath: config))
        return try host(world, nats, "hostA", ["--nats-import", "*"] + flags, config: config)
    }

    /// Runs `body` with an ``importer(_:_:_:)`` (with `flags`) and the hostile
    /// peer (with `peer`'s arguments) on one nats-server.
    static func withHostilePeer(
        _ peer: [String], importerFlags flags: [String] = [], _ body: (World, DaemonProcess) throws -> Void
    ) throws {
        let world = try World()
        defer { world.close() }
        let nats = try NATSServer(world)
        defer { nats.stop() }
        let importer = try Self.importer(world, nats, flags)
        _ = try world.spawn(Paths.python, ["-u", hostilePeer, "--url", nats.url] + peer, label: "hostile-nats-peer")
        try body(world, importer)
    }

    @Test("A host announcing thousands of targets: imports capped per host and in total over one daemon connection, refusals logged once and counted, local clients unaffected")
    func announcementFloodIsCapped() throws {
        let peer = ["announce", "--host", "evil1", "--host", "evil2", "--targets", "2000", "--interval-ms", "300"]
        try Self.withHostilePeer(peer, importerFlags: ["--nats-max-imports-per-host", "100", "--nats-max-imports", "150"]) { _, a in
            try waitUntil("150 stand-ins on host A", within: .seconds(30)) {
                try Self.natsStats(a)["imported"]?.intValue == 150
            }
            // Announced again and again: still 150, refusals said once per host and once for the total.
            sleep(for: .seconds(1))
            let stats = try CLI(a).json("stats")
            let bridge = stats["nats"] ?? .null
            #expect(bridge["imported"] == 150 && bridge["remote_hosts"] == 2, "\(bridge)")
            // 1,900 over the cap of each host, and 50 of the 200 left over the total.
            #expect(bridge["refused"] == 3850, "\(bridge)")
            #expect(bridge["max_imports"] == 150 && bridge["max_imports_per_host"] == 100, "\(bridge)")
            let log = a.process.stderr
            #expect(Self.occurrences("more targets to import than the cap per host", in: log) == 2, "\(a.process.logTail())")
            #expect(Self.occurrences("more targets to import than the total cap", in: log) == 1, "\(a.process.logTail())")
            // The bridge takes two daemon connections (its client, its stand-ins), whatever is announced.
            let connections = stats["daemon"]?["connections"]?.intValue ?? 0
            #expect(connections <= 3, "\(stats["daemon"] ?? .null)")
            let remote = try a.list().filter { $0["instances"]?.arrayValue?.first?["remote_host"] != nil }
            #expect(remote.count == 150)
            // A local client is served as usual.
            #expect(try CLI(a).run("list").status == 0)
            let table = try CLI(a).run("stats", ["--table"])
            #expect(table.stdout.contains("imported 150") && table.stdout.contains("refused 3850"), "\(table)")
        }
    }

    @Test("Announcements from more hosts than the bridge keeps track of are ignored, logged once and counted")
    func hostFloodIsCapped() throws {
        try Self.withHostilePeer(["announce", "--hosts", "1100", "--targets", "1"]) { _, a in
            try waitUntil("announcements refused", within: .seconds(30)) {
                (try Self.natsStats(a)["announcements_refused"]?.intValue ?? 0) > 0
            }
            let bridge = try Self.natsStats(a)
            #expect(bridge["remote_hosts"] == 1024, "\(bridge)")
            try waitUntil("1024 stand-ins", within: .seconds(30)) { try Self.natsStats(a)["imported"] == 1024 }
            #expect(Self.occurrences("announcements from more hosts than the bridge keeps track of", in: a.process.stderr) == 1)
        }
    }

    @Test("A host exporting 800 targets: all imported; a stand-in the daemon refuses is registered again, with backoff, once it can be")
    func everyExportImportedAndFailuresRetried() throws {
        let world = try World()
        defer { world.close() }
        let nats = try NATSServer(world)
        defer { nats.stop() }
        // Host A's daemon refuses registrations over 4 KiB, until a reload lifts it.
        let config = world.directory.file("a.json")
        func limit(_ bytes: Int) throws {
            try Data(#"{"max_registration_bytes": \#(bytes), "nats": {"announce_interval_ms": 2000}}"#.utf8)
                .write(to: URL(fileURLWithPath: config))
        }
        try limit(4096)
        let a = try Self.host(world, nats, "hostA", ["--nats-import", "*"], config: config)
        let b = try Self.host(world, nats, "hostB", ["--nats-export", "*"])
        // 800 targets on B, registered by one raw component.
        let many = try world.peer(b)
        for index in 0..<800 {
            _ = try many.register(String(format: "Many%03d", index), actions: ["echo"], mode: "pool")
        }
        try waitUntil("800 stand-ins on host A", within: .seconds(60)) {
            try Self.natsStats(a)["imported"]?.intValue == 800
        }
        #expect(try Self.natsStats(a)["refused"] == 0)

        // A target whose description A's daemon finds too large: refused, counted, said once.
        let big = try world.peer(b)
        _ = try big.result("mediator", "register", params: [
            "target": "Big", "actions": ["echo"], "description": .string(String(repeating: "d", count: 6000)),
        ])
        try waitUntil("the refusals counted", within: .seconds(20)) {
            (try Self.natsStats(a)["register_failures"]?.intValue ?? 0) >= 2
        }
        #expect(Self.occurrences("cannot import Big; retrying with backoff", in: a.process.stderr) == 1, "\(a.process.logTail())")
        #expect(try a.listing("Big") == nil)
        // The limit lifted: the stand-in gets in at a retry.
        try limit(1 << 20)
        a.process.signal(SIGHUP)
        try waitUntil("the stand-in for Big", within: .seconds(20)) {
            try a.listing("Big")?["instances"]?.arrayValue?.first?["remote_host"] == "hostB"
        }
    }
}

extension Integration.NATSBridge {
    @Test("A remote host flooding a local stream with partials: the caller gets overloaded and stays connected; the importer's memory stays bounded")
    func partialFloodIsBounded() throws {
        let flood = ["flood", "--host", "flooder", "--target", "Flood", "--partials", "200000", "--size", "8192"]
        try Self.withHostilePeer(flood) { world, a in
            try a.waitForTarget("Flood")
            let before = try ProcFS.residentKiB(a.pid)

            // A caller that reads, but far more slowly than the partials come.
            let peer = try world.peer(a)
            let id = try peer.request("Flood", "flood", params: [:], timeoutMs: 60_000, more: true)
            var partials = 0
            var final: JSONValue = .null
            var peak = before
            let deadline = ContinuousClock.now + .seconds(90)
            while ContinuousClock.now < deadline {
                let message = try peer.response(to: id, within: .seconds(30))
                if message["continues"] != true { final = message; break }
                partials += 1
                if partials % 100 == 0 {
                    peak = max(peak, try ProcFS.residentKiB(a.pid))
                    sleep(for: .milliseconds(20))
                }
            }
            #expect(final["error"]?["code"] == "overloaded", "after \(partials) partials: \(final)")
            let message = final["error"]?["message"]?.stringValue ?? ""
            #expect(message.contains("faster than"), "\(final)")
            #expect(partials < 200_000, "\(partials)")
            // Still connected, still served.
            #expect(try peer.result("mediator", "ping") == [:])
            peak = max(peak, try ProcFS.residentKiB(a.pid))
            #expect(peak - before < 200 * 1024, "the importer grew from \(before) KiB to \(peak) KiB")
        }
    }
}
