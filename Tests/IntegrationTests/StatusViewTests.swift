import Foundation
import MediatorProtocol
import Testing

extension Integration {
    /// `mediatorctl status` and `describe` for people (issue 24, point 5):
    /// text with `--table` (as on a terminal), the same JSON as before when piped.
    @Suite("status and describe for people")
    struct StatusView {
        @Test("status reads like systemctl status, describe as signatures; piped, both stay JSON")
        func statusAndDescribeOfARealComponent() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let manifest = try folder.write("notes.json", folder.notes("Notes"))
            let daemon = try world.daemon(["--components", folder.path])
            let cli = CLI(daemon)
            #expect(try cli.json("start", ["Notes"]) == ["target": "Notes", "state": "running"])

            // The description the component registered with (the manifest gives none).
            // Piped: one line of compact JSON, with the new members.
            let piped = try cli.run("status", ["Notes"])
            #expect(piped.status == 0, "\(piped)")
            let lines = try piped.jsonLines()
            let status = try #require(lines.first, "\(piped)")
            #expect(lines.count == 1 && status["state"] == "running", "\(piped)")
            let pid = try #require(status["pids"]?.arrayValue?.first?.intValue, "\(status.jsonText)")
            #expect(status["process_uptime_s"]?.doubleValue != nil, "\(status.jsonText)")
            #expect(status["unit"] == nil, "\(status.jsonText)")

            let text = try cli.run("status", ["Notes", "--table"])
            #expect(text.status == 0, "\(text)")
            #expect(text.stdout.hasPrefix("● Notes - In-memory notes (Python example)\n"), "\(text)")
            for line in [
                "      State: running (exec)\n", "     PID(s): \(pid) (", "      Since: ", " ago", "   Restarts: 0\n",
                "   Manifest: \(manifest)\n", " Held calls: 0\n", "      Calls: 0 served\n",
            ] {
                #expect(text.stdout.contains(line), "no \(line.debugDescription) in:\n\(text.stdout)")
            }
            #expect(!text.stdout.contains("{"), "text, not JSON: \(text)")

            let described = try cli.run("describe", ["Notes"])
            #expect(described.status == 0, "\(described)")
            let interface = try JSONValue.parse(described.stdout)
            #expect(interface["actions"]?.arrayValue?.count == 7, "\(described)")
            let signatures = try cli.run("describe", ["Notes", "--table"])
            #expect(signatures.status == 0, "\(signatures)")
            #expect(signatures.stdout.hasPrefix("Notes - In-memory notes (Python example)\nState: running, exclusive, PID(s) \(pid)\n\nActions:\n"),
                    "\(signatures)")
            #expect(signatures.stdout.contains("\n  add(text: string, tags?: [string]) -> {id: integer}\n"), "\(signatures)")
            #expect(signatures.stdout.contains("\n      Note = {id: integer, text: string, tags: [string]}\n"), "\(signatures)")
        }

        @Test("status of a unit component shows the unit's journal lines from journalctl, none when it fails or with -n 0")
        func journalOfAUnit() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            try folder.write("weather.json", ["target": "Weather", "actions": ["get"], "unit": "mediator-component@Weather.service"])
            let daemon = try world.daemon(["--components", folder.path])
            let cli = CLI(daemon)
            #expect(try cli.json("status", ["Weather"])["unit"] == "mediator-component@Weather.service")

            // A journalctl of our own, first in PATH, that says how it was asked.
            let good = world.directory.file("good")
            let bad = world.directory.file("bad")
            for (folderPath, body) in [
                (good, "#!/bin/sh\necho \"2026-11-27T10:20:01+0000 host weather[77]: asked $*\"\necho \"second line\"\n"),
                (bad, "#!/bin/sh\necho \"should not be shown\"\nexit 1\n"),
            ] {
                try FileManager.default.createDirectory(atPath: folderPath, withIntermediateDirectories: true)
                try body.write(toFile: folderPath + "/journalctl", atomically: true, encoding: .utf8)
                try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folderPath + "/journalctl")
            }
            func environment(_ folder: String) -> [String: String] {
                var variables = ProcessInfo.processInfo.environment
                variables["PATH"] = folder + ":" + (variables["PATH"] ?? "/usr/bin:/bin")
                return variables
            }

            let shown = try cli.run("status", ["Weather", "--table", "-n", "3"], environment: environment(good))
            #expect(shown.status == 0, "\(shown)")
            #expect(shown.stdout.hasPrefix("○ Weather\n"), "\(shown)")
            #expect(shown.stdout.contains("       Unit: mediator-component@Weather.service\n"), "\(shown)")
            #expect(shown.stdout.hasSuffix("""
                 Calls: 0 served

                2026-11-27T10:20:01+0000 host weather[77]: asked -u mediator-component@Weather.service -n 3 --no-pager -o short-iso --quiet
                second line

                """), "\(shown)")

            let none = try cli.run("status", ["Weather", "--table", "--lines", "0"], environment: environment(good))
            #expect(none.status == 0 && none.stdout.hasSuffix("Calls: 0 served\n"), "\(none)")
            let failing = try cli.run("status", ["Weather", "--table"], environment: environment(bad))
            #expect(failing.status == 0 && failing.stdout.hasSuffix("Calls: 0 served\n"), "\(failing)")
            #expect(!failing.stdout.contains("should not be shown") && failing.stderr.isEmpty, "\(failing)")
            // JSON, piped: journalctl is not run.
            let piped = try cli.run("status", ["Weather"], environment: environment(good))
            #expect(try JSONValue.parse(piped.stdout)["unit"] == "mediator-component@Weather.service", "\(piped)")
        }
    }
}
