import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// What `mediator/status` tells of a managed component's time and unit
/// (mediatorctl status shows it as systemctl status does).
extension BrokerActivationTests {
    @Test func statusCountsTheProcessUptimeFromTheSpawnAndTheUptimeFromTheRegistration() {
        let d = driver([Self.manifest()])
        d.connect(1)
        d.send(#"{"id":1,"target":"Notes","action":"add"}"#, from: 1)
        var status = d.daemon("status", #"{"target":"Notes"}"#, from: 1)?["result"]
        #expect(status?["process_uptime_s"] == nil, "no pid yet: \(status?.jsonText ?? "")")
        started(d, spawn: 0, as: 7)
        d.advance(ms: 300)
        register(d, "Notes", from: 7)
        d.advance(ms: 2000)
        status = d.daemon("status", #"{"target":"Notes"}"#, from: 1)?["result"]
        #expect(status?["uptime_s"] == .double(2))
        #expect(status?["process_uptime_s"] == .double(2.3))
        #expect(status?["unit"] == nil, "an exec component has no unit")

        // A crash and its replacement: the new process counts from its own spawn.
        d.disconnect(7)
        d.apply(d.broker.processExited(spawnID: d.spawns[0].spawnID, end: .signaled(9), now: d.now))
        _ = d.take(1)  // the call in flight fails
        status = d.daemon("status", #"{"target":"Notes"}"#, from: 1)?["result"]
        #expect(status?["process_uptime_s"] == nil, "no live process: \(status?.jsonText ?? "")")
        d.advance(ms: 200)
        d.expire()
        #expect(d.spawns.count == 2)
        started(d, spawn: 1, as: 8)
        d.advance(ms: 1500)
        status = d.daemon("status", #"{"target":"Notes"}"#, from: 1)?["result"]
        #expect(status?["process_uptime_s"] == .double(1.5))
        #expect(status?["restarts"] == 1)
    }

    @Test func statusNamesTheUnitOfAUnitComponent() {
        let manifest = Manifest(
            file: "/m/Notes.json", target: "Notes", actions: [ActionSpec(name: "add")],
            launch: .unit("mediator-component@Notes.service"))
        let d = driver([manifest])
        d.connect(1)
        let status = d.daemon("status", #"{"target":"Notes"}"#, from: 1)?["result"]
        #expect(status?["unit"] == "mediator-component@Notes.service")
        #expect(status?["activation"] == "unit")
        #expect(status?["process_uptime_s"] == nil)
    }
}
