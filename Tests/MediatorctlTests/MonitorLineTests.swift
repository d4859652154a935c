import MediatorProtocol
import Testing

@testable import mediatorctl

@Suite struct MonitorLineTests {
    static let time = MonitorLine.WallClock(hour: 9, minute: 5, second: 3, millisecond: 7)
    static let cli: JSONValue = ["connection": 3, "pid": 4103, "uid": 1001, "name": "cli"]
    static let notes: JSONValue = ["connection": 2, "pid": 4102, "uid": 1001]

    @Test func aRefusedCallIsOneLineWithItsCode() {
        let record: JSONValue = [
            "type": "refused", "from": Self.cli, "target": "Nobody", "action": "a", "uptime_us": 12,
            "message": ["id": 8, "error": ["code": "target_not_found", "message": #"no component serves target "Nobody""#]],
        ]
        #expect(MonitorLine.render(record, at: Self.time)
            == #"09:05:03.007 refused cli[4103] → mediatord Nobody/a id=8 code=target_not_found (no component serves target "Nobody")"#)
    }

    @Test func requestsResponsesAndEvents() {
        let request: JSONValue = [
            "type": "request", "from": Self.cli, "to": Self.notes, "target": "Notes",
            "message": ["id": 7, "target": "Notes", "action": "add", "params": ["x": 1]],
        ]
        #expect(MonitorLine.render(request, at: Self.time) == "09:05:03.007 request cli[4103] → [4102] Notes/add id=7")
        let response: JSONValue = [
            "type": "response", "from": Self.notes, "to": Self.cli, "target": "Notes", "elapsed_us": 1812,
            "message": ["id": "c", "result": "ok"],
        ]
        #expect(MonitorLine.render(response, at: Self.time)
            == #"09:05:03.007 response [4102] → cli[4103] Notes id="c" elapsed=1.812ms"#)
        let event: JSONValue = ["type": "event", "from": Self.notes, "event": "user.login", "message": ["event": "user.login"]]
        #expect(MonitorLine.render(event, at: Self.time) == "09:05:03.007 event [4102] → * user.login")
    }

    /// Names, targets and messages come from peers: they cannot drive the
    /// terminal or forge a second line.
    @Test func peerStringsAreEscaped() {
        let record: JSONValue = [
            "type": "refused", "from": ["pid": 1, "name": "a\u{1b}[2J"], "target": "T", "action": "x",
            "message": ["error": ["code": "forbidden", "message": "no\nfake line"]],
        ]
        let line = MonitorLine.render(record, at: Self.time)
        #expect(!line.contains("\n") && !line.contains("\u{1b}"))
        #expect(line == #"09:05:03.007 refused a\x1b[2J[1] → mediatord T/x code=forbidden (no\nfake line)"#)
    }
}
