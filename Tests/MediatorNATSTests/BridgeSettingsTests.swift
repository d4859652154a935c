import MediatorNATSBridge
import MediatorProtocol
import Testing

/// The bridge's pure parts: default host names, announcements.
struct BridgeSettingsTests {
    @Test func theDefaultHostNameIsUniquePerDaemonInstance() {
        let system = NATSBridgeSettings.defaultHost(
            machine: "web-1", userUID: nil, socketPath: "/run/mediator/mediator.sock", socketIsDefault: true)
        let user = NATSBridgeSettings.defaultHost(
            machine: "web-1", userUID: 1000, socketPath: "/run/user/1000/mediator/mediator.sock", socketIsDefault: true)
        let other = NATSBridgeSettings.defaultHost(
            machine: "web-1", userUID: nil, socketPath: "/tmp/b.sock", socketIsDefault: false)
        #expect(system == "web-1")
        #expect(user == "web-1/user:1000")
        #expect(other == "web-1:/tmp/b.sock")
        #expect(Set([system, user, other]).count == 3)
    }

    @Test func announcementsCarryTheDaemonsInstance() throws {
        let announcement = BridgeMessages.Announcement(
            host: "a", targets: [.init(name: "Notes", description: nil, actions: [ActionSpec(name: "add")])],
            intervalMs: 2000, instance: "x1")
        let decoded = try #require(BridgeMessages.Announcement.decode(announcement.encoded))
        #expect(decoded == announcement)
        // From a bridge that predates it: none.
        #expect(BridgeMessages.Announcement.decode(Array(#"{"host": "a", "interval_ms": 5, "targets": []}"#.utf8))?.instance == nil)
    }
}
