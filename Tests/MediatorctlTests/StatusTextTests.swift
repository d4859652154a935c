import MediatorProtocol
import Testing

@testable import mediatorctl

/// What `mediatorctl status` prints for people, like `systemctl status`.
@Suite struct StatusTextTests {
    /// A fixed clock: `T` and the seconds since the epoch.
    static func time(_ seconds: Double) -> String { "T\(Int(seconds))" }

    @Test func aRunningExecComponent() {
        let status: JSONValue = [
            "target": "Notes", "description": "In-memory notes", "state": "running", "activation": "exec",
            "mode": "exclusive", "calls_served": 17, "uptime_s": 192.4, "process_uptime_s": 193.1, "restarts": 1,
            "last_exit": "killed by signal 9", "manifest": "/etc/mediator/components/notes.json", "held_calls": 0,
            "pids": [4242], "instances": [["instance": 1, "pid": 4242, "uid": 1000, "gid": 1000, "exe": "/usr/bin/python3.12"]],
        ]
        #expect(StatusText.render(status, now: 1000, time: Self.time) == """
            ● Notes - In-memory notes
                  State: running (exec)
                 PID(s): 4242 (python3.12)
                  Since: T807; 3m12s ago (process started 3m13s ago)
               Restarts: 1
              Last exit: killed by signal 9
               Manifest: /etc/mediator/components/notes.json
             Held calls: 0
                  Calls: 17 served

            """)
    }

    @Test func anActivatableUnitComponentWithItsJournal() {
        let status: JSONValue = [
            "target": "Weather", "description": "", "state": "activatable", "activation": "unit", "calls_served": 0,
            "restarts": 0, "manifest": "/m/weather.json", "unit": "mediator-component@Weather.service", "held_calls": 0,
            "pids": [], "instances": [],
        ]
        let journal = ["2026-11-27T10:20:01+00:00 host weather[77]: ready", "2026-11-27T10:20:02+00:00 host weather[77]: \u{1b}[31mred " + String(repeating: "x", count: 40)]
        let text = StatusText.render(status, journal: journal, now: 1000, width: 60, time: Self.time)
        #expect(text.split(separator: "\n").allSatisfy { $0.count <= 60 }, "\(text)")
        #expect(text == """
            ○ Weather
                  State: activatable (unit)
                 PID(s): -
               Restarts: 0
               Manifest: /m/weather.json
                   Unit: mediator-component@Weather.service
             Held calls: 0
                  Calls: 0 served

            2026-11-27T10:20:01+00:00 host weather[77]: ready
            2026-11-27T10:20:02+00:00 host weather[77]: \\x1b[31mred xxx…

            """)
    }

    @Test func aFailedOneAndOneThatRegisteredItself() {
        let failed: JSONValue = ["target": "Crash", "state": "failed", "activation": "exec", "process_uptime_s": 2, "pids": [9]]
        #expect(StatusText.render(failed, now: 100, time: Self.time) == """
            × Crash
              State: failed (exec)
             PID(s): 9
              Since: process started T98; 2s ago

            """)
        // An older daemon, or a target no manifest names: what there is.
        let own: JSONValue = ["target": "Kv", "state": "running", "instances": [["pid": 5], ["pid": 6]], "uptime_s": 5]
        #expect(StatusText.render(own, now: 100, time: Self.time) == """
            ● Kv
              State: running (registered itself)
             PID(s): 5, 6
              Since: T95; 5s ago

            """)
    }

    @Test func aTargetWhoseManifestWasSkippedShowsItsProblem() {
        let invalid: JSONValue = [
            "target": "Kv2", "state": "invalid", "description": "", "instances": [], "calls_served": 0,
            "manifest": "/etc/mediator/components.d/kv2.json",
            "problem": ["file": "/etc/mediator/components.d/kv2.json", "member": "exec", "reason": "must be\nan array"],
        ]
        #expect(StatusText.render(invalid, now: 100, time: Self.time) == """
            × Kv2
                State: invalid (the daemon skipped its manifest)
              Problem: member "exec": must be\\nan array
             Manifest: /etc/mediator/components.d/kv2.json
                Calls: 0 served

            """)
    }

    @Test func whatTheDaemonSaidIsEscaped() {
        let status: JSONValue = ["target": "T", "description": "a\nb", "state": "running", "last_exit": "x\u{202e}y"]
        let text = StatusText.render(status, now: 0, time: Self.time)
        #expect(text.hasPrefix("● T - a\\nb\n"), "\(text)")
        #expect(text.contains("Last exit: x\\u202ey\n"), "\(text)")
    }

    @Test func journalctlIsAskedAsSystemctlStatusAsksIt() {
        #expect(Journal.arguments(unit: "a.service", lines: 10, user: false)
            == ["-u", "a.service", "-n", "10", "--no-pager", "-o", "short-iso", "--quiet"])
        #expect(Journal.arguments(unit: "a.service", lines: 3, user: true)
            == ["--user", "-u", "a.service", "-n", "3", "--no-pager", "-o", "short-iso", "--quiet"])
    }

    @Test func localTimeReadsAsSystemctlWritesIt() {
        // Whatever the zone: a weekday, the date, the time and the zone's name.
        let text = StatusText.localTime(1_795_000_000)
        #expect(text.split(separator: " ").count == 4, "\(text)")
        #expect(text.contains("2026-"), "\(text)")
    }
}
