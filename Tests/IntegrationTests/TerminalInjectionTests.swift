import Foundation
import MediatorProtocol
import Testing

extension Integration {
    /// A component's strings reach mediatorctl's text for people (issue 23,
    /// point 8): an error code with OSC (window title), ESC (clear screen)
    /// and a newline (a forged row) must be shown escaped, as systemctl
    /// would, in `call`'s error line, the `stats` table and the `list` table;
    /// `--json` stays what the daemon sent.
    @Suite("Terminal injection")
    struct TerminalInjection {
        static let code = "x\u{1b}]0;pwned\u{7}\u{1b}[2J\nNotes          999"
        static let escapedCode = #"x\x1b]0;pwned\x07\x1b[2J\nNotes          999"#

        @Test("A component's hostile error code and message are escaped in call, stats and list; --json is unchanged")
        func hostileErrorCode() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--slow-call-threshold-ms", "1"])
            let component = try world.peer(daemon)
            _ = try component.result("mediator", "register", params: [
                "target": "Evil", "actions": ["fail"], "description": "\u{1b}[31mred\u{1b}[0m\nForged  running",
            ])
            let cli = CLI(daemon)

            let call = try world.spawn(
                Paths.mediatorctl, ["call", "--socket", daemon.socketPath, "Evil", "fail"], label: "call")
            let request = try component.incomingRequest()
            // Over the 1 ms threshold, so that the call is listed among the slow ones with its code.
            sleep(for: .milliseconds(5))
            try component.reply(to: request, error: Self.code, message: "bad\u{1b}[2K\u{9b}\nmediatorctl: forged")
            #expect(try call.waitForExit() == .exited(1), "\(call.logTail())")
            #expect(call.stderr == "mediatorctl: \(Self.escapedCode): bad\\x1b[2K\\x9b\\nmediatorctl: forged\n",
                    "\(call.logTail())")

            let stats = try cli.run("stats", ["--table"])
            #expect(stats.status == 0, "\(stats)")
            #expect(!stats.stdout.unicodeScalars.contains { $0 != "\n" && ControlEscaping.isControl($0) }, "\(stats)")
            // The daemon counts a code outside the code syntax as `other`
            // (point 3), so the table never holds it; the description and
            // the cells' escaping are checked in the list and unit tests.
            #expect(stats.stdout.contains("Evil/fail") && !stats.stdout.contains("pwned"), "\(stats)")
            #expect(!ChildProcess.lines(stats.stdout).contains { $0.hasPrefix("Notes ") }, "\(stats)")

            let list = try cli.run("list", ["--table"])
            #expect(list.status == 0, "\(list)")
            #expect(ChildProcess.lines(list.stdout).contains { $0.hasSuffix(#"\x1b[31mred\x1b[0m\nForged  running"#) },
                    "\(list)")
            #expect(!list.stdout.contains("\u{1b}"), "\(list)")

            // JSON for programs is what the daemon sent, escaped as JSON only.
            let json = try cli.run("list", ["--json"])
            let evil = try JSONValue.parse(json.stdout)["targets"]?.arrayValue?.first { $0["target"] == "Evil" }
            #expect(evil?["description"] == "\u{1b}[31mred\u{1b}[0m\nForged  running", "\(json)")
        }
    }
}
