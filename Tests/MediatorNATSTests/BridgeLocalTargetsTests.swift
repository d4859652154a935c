import MediatorProtocol
import Testing

@testable import MediatorNATSBridge

@Suite("Bridge: the local targets it exports")
struct BridgeLocalTargetsTests {
    @Test func runningAndActivatableTargetsAreLocalButStandInsAndInvalidOnesAreNot() throws {
        let listing = try JSONParser.parse(
            #"""
            {"targets": [
              {"target": "Running", "instances": [{"instance": 1, "pid": 10}], "state": "running"},
              {"target": "Activatable", "instances": [], "state": "activatable"},
              {"target": "Elsewhere", "instances": [{"instance": 1, "pid": 11, "remote_host": "b"}], "state": "running"},
              {"target": "Kv2", "instances": [], "state": "invalid",
               "problem": {"file": "/c/kv2.json", "member": "exec", "reason": "is required"}}
            ]}
            """#)
        #expect(BridgeSession.localTargets(listing).keys.sorted() == ["Activatable", "Running"])
    }
}
