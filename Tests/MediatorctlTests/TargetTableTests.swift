import MediatorProtocol
import Testing

@testable import mediatorctl

@Suite struct TargetTableTests {
    /// A `list` result as the daemon gives it with components from manifests.
    static let list: JSONValue = [
        "targets": [
            [
                "target": "Notes", "description": "In-memory notes", "actions": ["add", "get"], "mode": "exclusive",
                "state": "running", "activation": "exec", "uptime_s": 192.4, "calls_served": 17,
                "instances": [["instance": 1, "pid": 4242, "uid": 1000, "gid": 1000, "name": "notes", "in_flight": 0]],
            ],
            [
                "target": "Weather", "description": "Forecasts", "actions": [], "state": "activatable",
                "activation": "unit", "calls_served": 0, "instances": [],
            ],
            [
                "target": "Pool", "description": "", "state": "running", "uptime_s": 7505, "calls_served": 3,
                "instances": [["pid": 101], ["pid": 102], ["pid": 103], ["pid": 104], ["pid": 105]],
            ],
            [
                "target": "Broken", "description": "Fails at start", "state": "failed", "activation": "exec",
                "calls_served": 0, "instances": [],
            ],
        ],
    ]

    @Test func table() {
        #expect(TargetTable.render(Self.list) == """
            TARGET   STATE        PID(S)          UPTIME  CALLS  ACTIVATION  DESCRIPTION
            Notes    running      4242            3m12s   17     exec        In-memory notes
            Weather  activatable  -               -       0      unit        Forecasts
            Pool     running      101,102,103,+2  2h05m   3      -
            Broken   failed       -               -       0      exec        Fails at start

            """)
    }

    @Test("A daemon without state, uptime, calls or activation (before manifests)")
    func olderDaemon() {
        let list: JSONValue = [
            "targets": [
                [
                    "target": "Notes", "description": "In-memory notes (Python example)", "actions": ["add"],
                    "mode": "exclusive", "instances": [["instance": 1, "pid": 77, "uid": 0, "gid": 0, "in_flight": 0]],
                ],
                ["target": "Gone", "instances": []],
            ],
        ]
        #expect(TargetTable.render(list) == """
            TARGET  STATE    PID(S)  UPTIME  CALLS  ACTIVATION  DESCRIPTION
            Notes   running  77      -       -      -           In-memory notes (Python example)
            Gone    -        -       -       -      -

            """)
    }

    @Test("A target whose manifest was skipped shows its problem; the files no target stands for follow the table")
    func invalidManifests() {
        let list: JSONValue = [
            "targets": [
                [
                    "target": "Kv2", "description": "", "actions": [], "instances": [], "state": "invalid", "calls_served": 0,
                    "manifest": "/c/kv2.json", "problem": ["file": "/c/kv2.json", "member": "exec", "reason": "is required"],
                ],
            ],
            "invalid_manifests": [
                ["file": "/c/old.json", "reason": "is not valid JSON: expected a value at byte 0"],
                ["file": "/c/notes-2.json", "member": "target", "reason": "target \"Notes\" is already declared by /c/notes.json", "target": "Notes"],
                ["file": "/c/\u{1b}[2J.json", "reason": "forged\nline"],
            ],
            "invalid_manifests_omitted": 2,
        ]
        #expect(TargetTable.render(list) == #"""
            TARGET  STATE    PID(S)  UPTIME  CALLS  ACTIVATION  DESCRIPTION
            Kv2     invalid  -       -       0      -           /c/kv2.json: member "exec": is required

            Invalid manifests:
              /c/old.json: is not valid JSON: expected a value at byte 0
              /c/notes-2.json: member "target": target "Notes" is already declared by /c/notes.json
              /c/\x1b[2J.json: forged\nline
              and 2 more (the daemon's log names them)

            """#)
    }

    @Test("No targets, or not a list at all: the header alone")
    func empty() {
        let header = "TARGET  STATE  PID(S)  UPTIME  CALLS  ACTIVATION  DESCRIPTION\n"
        #expect(TargetTable.render(["targets": []]) == header)
        #expect(TargetTable.render(.null) == header)
        #expect(TargetTable.render(["targets": "nope"]) == header)
        #expect(TargetTable.render(["targets": [], "extra": 1], width: 20) == header)
    }

    @Test("Odd values: no crash, and every row stays one line")
    func oddValues() {
        let list: JSONValue = [
            "targets": [
                [
                    "state": 5, "activation": .null, "uptime_s": "long", "calls_served": 2.5,
                    "description": "two\nlines\tand a tab", "instances": [["pid": "x"], "junk"],
                ],
                "not an object",
            ],
        ]
        let lines = TargetTable.render(list).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 4)  // header, two rows, and the final empty one
        #expect(lines[1].hasPrefix("?       5      ?,?     -       -      -           two\\nlines\\tand a tab"))
        #expect(lines[2] == "?       -      -       -       -      -")
    }

    @Test("A peer's name, state or description cannot drive the terminal or forge a row: escaped, and measured escaped")
    func hostileStrings() {
        let list: JSONValue = [
            "targets": [
                ["target": "T", "state": "run\u{1b}[2J", "description": "\u{1b}]0;pwned\u{7}\nEvil    running  1"],
                ["target": "U\u{9b}31m", "state": "running"],
            ],
        ]
        let text = TargetTable.render(list)
        #expect(!text.unicodeScalars.contains { $0 != "\n" && ControlEscaping.isControl($0) })
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[1] == #"T         run\x1b[2J  -       -       -      -           \x1b]0;pwned\x07\nEvil    running  1"#)
        #expect(lines[2] == #"U\x9b31m  running     -       -       -      -"#)
    }

    @Test("With a width the description is cut to fit, never below its header")
    func width() {
        let list: JSONValue = ["targets": [["target": "T", "state": "running", "description": "0123456789abcdef"]]]
        let leading = "T       running  -       -       -      -           ".count
        let cut = TargetTable.render(list, width: leading + 12)
        #expect(cut.split(separator: "\n")[1] == "T       running  -       -       -      -           0123456789a…")
        for line in cut.split(separator: "\n") { #expect(line.count <= leading + 12) }
        let narrow = TargetTable.render(list, width: 5)
        #expect(narrow.split(separator: "\n")[1].hasSuffix("0123456789…"))  // "DESCRIPTION" is 11 wide
        #expect(TargetTable.render(list, width: 500) == TargetTable.render(list))
        #expect(TargetTable.render(list, width: leading + 16) == TargetTable.render(list))
    }

    static let uptimes: [(Double, String)] = [
        (0, "0s"), (0.9, "0s"), (59.9, "59s"), (60, "1m00s"), (192, "3m12s"), (3599, "59m59s"),
        (3600, "1h00m"), (7505, "2h05m"), (86399, "23h59m"), (86400, "1d00h"), (273_605, "3d04h"),
        (34_560_000, "400d00h"), (-1, "-"), (.nan, "-"), (.infinity, "-"), (1e300, "106751991167300d15h"),
    ]

    @Test(arguments: uptimes)
    func uptime(seconds: Double, text: String) {
        #expect(TargetTable.uptime(seconds) == text)
    }

    @Test func pids() {
        #expect(TargetTable.pids([]) == "-")
        #expect(TargetTable.pids([["pid": 1]]) == "1")
        #expect(TargetTable.pids([["pid": 1], ["pid": 2], ["pid": 3]]) == "1,2,3")
        #expect(TargetTable.pids([["pid": 1], ["pid": 2], ["pid": 3], ["pid": 4]]) == "1,2,3,+1")
        #expect(TargetTable.pids([["name": "no pid"]]) == "?")
    }
}
