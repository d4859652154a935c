import Foundation
import MediatorProtocol
import Testing

extension Integration.NATSBridge {
    /// Issue 28 across hosts. The bridge's own connections do not survive a
    /// hand-over (libnats cannot take over another process's socket): the
    /// new daemon's bridge connects afresh. Its stand-ins must be back
    /// before anyone notices: the serving host announces at once to a
    /// daemon process it has not heard before (not at the end of its
    /// interval, 5 s here), and calls to the stand-ins' targets are held
    /// meanwhile. The one call in flight through the old bridge at the
    /// instant of the exec may have reached B: it ends
    /// `component_unavailable`, delivery unknown, as when NATS is lost.
    @Test("Host A re-executed under calls to host B's component: no target_not_found, B announces at once to A's new daemon")
    func importerReexec() throws {
        let world = try World()
        defer { world.close() }
        let nats = try NATSServer(world)
        let config = world.directory.file("slow-announce.json")
        try Data(#"{"nats": {"announce_interval_ms": 5000}}"#.utf8).write(to: URL(fileURLWithPath: config))
        let b = try Self.host(world, nats, "hostB", ["--nats-export", "*"], config: config)
        _ = try world.notes(b)
        // B exports Notes at its first round after Notes registered: A, new to B, hears it at once.
        try b.waitForTarget("Notes")
        let a = try Self.host(world, nats, "hostA", ["--nats-import", "*"], config: config)
        try a.waitForTarget("Notes", within: .seconds(3))

        let caller = try world.peer(a)
        let admin = try world.peer(a)
        let reexec = try admin.request("mediator", "reexec")
        var answered = 0
        var failures: [String] = []
        let until = ContinuousClock.now + .milliseconds(1500)
        while ContinuousClock.now < until {
            let answer = try caller.response(to: try caller.request("Notes", "whoami", timeoutMs: 4000), within: .seconds(10))
            if let error = answer["error"] { failures.append(error.jsonText) } else { answered += 1 }
        }
        #expect(try admin.response(to: reexec, within: .seconds(20))["result"]?["reexecs"] == 1)
        let unknownDelivery = failures.filter { $0.contains("component_unavailable") && $0.contains(#""delivered":null"#) }
        #expect(failures.count == unknownDelivery.count && failures.count <= 1,
            "\(failures.count) of \(failures.count + answered) calls failed: \(failures.prefix(3))")
        #expect(answered > 0)
        // After the re-exec, still served from B.
        #expect(try caller.result("Notes", "whoami", within: .seconds(10))["pid"] != nil)
        #expect(a.process.stderr.contains("held calls answered") == false, "no held call waited out its window")
    }
}
