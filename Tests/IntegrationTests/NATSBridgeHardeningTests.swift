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
