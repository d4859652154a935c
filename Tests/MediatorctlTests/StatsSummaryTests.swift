import ArgumentParser
import MediatorProtocol
import Testing

@testable import mediatorctl

@Suite struct StatsSummaryTests {
    @Test func rendersTotalsTargetsActionsAndSlowCalls() {
        let stats: JSONValue = [
            "uptime_s": 200,
            "daemon": [
                "connections": 3, "calls_routed": 400, "calls_in_flight": 1, "calls_held": 0, "policy_denials": 2,
                "bad_frames": 0, "backlog_disconnects": 0,
            ],
            "targets": [[
                "target": "Notes", "calls": 400, "errors": 4, "in_flight": 1,
                "latency": ["count": 399, "p50_ms": 0.25, "p99_ms": 12.4],
                "actions": [[
                    "action": "add", "calls": 400, "errors": 4, "in_flight": 1,
                    "latency": ["count": 399, "p50_ms": 0.25, "p99_ms": 1500.0],
                ]],
            ]],
            "slow_calls": [
                "threshold_ms": 1000.0, "total": 1,
                "calls": [["target": "Notes", "action": "add", "duration_ms": 1500.0, "code": "ok", "pid": 7, "uid": 1000, "at_s": 65.0]],
            ],
        ]
        let text = StatsSummary.render(stats)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0] == "uptime 3m20s  connections 3  calls 400 (2.0/s)  in flight 1  held 0")
        #expect(lines[1] == "policy denials 2  bad frames 0  backlog disconnects 0  slow calls 1 (over 1s)")
        #expect(lines[3] == "TARGET/ACTION  CALLS  CALLS/S  P50     P99   ERRORS  IN FLIGHT")
        #expect(lines[4] == "Notes          400    2.0      0.25ms  12ms  4       1")
        #expect(lines[5] == "  add          400    2.0      0.25ms  1.5s  4       1")
        #expect(lines.contains("Notes/add      1.5s      ok    7    1000  1m05s"))
    }

    @Test func saysWhatTheDaemonLeftOut() {
        let text = StatsSummary.render(["uptime_s": 1, "targets": [], "omitted": ["uids": 1200, "slow_calls": 3]])
        #expect(text.hasSuffix("\nleft out of the reply (over its size): 3 slow calls, 1200 uids\n"), "\(text)")
        #expect(!StatsSummary.render(["uptime_s": 1, "targets": []]).contains("left out"))
    }

    @Test("A component's error code in the slow calls cannot drive the terminal or forge a row")
    func hostileCodeEscaped() {
        let code = "x\u{1b}]0;pwned\u{7}\u{1b}[2J\nNotes  999"
        let stats: JSONValue = [
            "uptime_s": 10, "daemon": [:],
            "targets": [["target": "Notes", "calls": 1, "actions": [["action": "add", "calls": 1]]]],
            "slow_calls": [
                "threshold_ms": 1.0, "total": 1,
                "calls": [["target": "Notes", "action": "add", "duration_ms": 5.0, "code": .string(code), "pid": 7, "uid": 1000, "at_s": 5.0]],
            ],
        ]
        let text = StatsSummary.render(stats)
        #expect(!text.unicodeScalars.contains { $0 != "\n" && ControlEscaping.isControl($0) })
        #expect(text.contains(#"x\x1b]0;pwned\x07\x1b[2J\nNotes  999"#))
        #expect(!text.split(separator: "\n").contains { $0.hasPrefix("Notes  999") })
    }

    @Test func parsesTheVerb() throws {
        let command = try Mediatorctl.parseAsRoot(["stats", "Notes", "--json"])
        #expect((command as? Stats)?.target == "Notes")
        #expect(throws: (any Error).self) { try Mediatorctl.parseAsRoot(["stats", "--table", "--json"]) }
    }
}
