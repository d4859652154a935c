import MediatorProtocol
import Testing

@testable import MediatorNATSBridge

/// The JSON between bridges: keep-alives and what is known of a call's delivery.
@Suite("Bridge messages")
struct BridgeMessagesTests {
    @Test func aCallAsksForKeepAlivesWithinTheRangeAServerHonours() throws {
        let request = BridgeMessages.CallRequest(action: "a", params: [:], timeoutMs: 5000, more: false, keepAliveMs: 1000)
        #expect(BridgeMessages.CallRequest.decode(request.encoded) == .success(request))
        func asked(_ member: String) throws -> Int64? {
            try BridgeMessages.CallRequest.decode(Array(#"{"action":"a"\#(member)}"#.utf8)).get().keepAliveMs
        }
        // An older bridge asks for none; a caller cannot ask for a flood.
        #expect(try asked("") == nil)
        #expect(try asked(#","keepalive_ms":1"#) == 100)
        #expect(try asked(#","keepalive_ms":99999999"#) == 60_000)
        let refused = BridgeMessages.CallRequest.decode(Array(#"{"action":"a","keepalive_ms":0}"#.utf8))
        #expect(throws: MediatorError.self) { try refused.get() }
    }

    @Test func aKeepAliveIsNeitherAResultNorAnError() {
        #expect(BridgeMessages.Reply.decode(BridgeMessages.Reply.alive(host: "hostB").encoded) == .alive(host: "hostB"))
        #expect(BridgeMessages.Reply.decode(Array(#"{"alive":true}"#.utf8)) == .alive(host: ""))
        // An error's data crosses as it is, delivered included.
        let error = MediatorError(.timeout, "late", data: ["delivered": true])
        #expect(BridgeMessages.Reply.decode(BridgeMessages.Reply.error(error).encoded) == .error(error))
    }

    @Test func anAnnouncementSaysWhetherTheHostSendsKeepAlives() {
        let current = BridgeMessages.Announcement(host: "b", targets: [], intervalMs: 2000)
        #expect(current.keepsAlive)
        #expect(BridgeMessages.Announcement.decode(current.encoded)?.keepsAlive == true)
        // An older bridge's announcement has no "keepalive": its calls wait for their timeout.
        let older = BridgeMessages.Announcement.decode(Array(#"{"host":"b","targets":[],"interval_ms":2000}"#.utf8))
        #expect(older?.keepsAlive == false)
    }
}
