import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// Manifests the daemon skips are reported by `mediatorctl status` and
    /// `list`, not only in the daemon's log (issue 24, point 8).
    @Suite("Invalid manifests")
    struct InvalidManifestTests {
        @Test("status and list report a skipped manifest with its reason; a call says why; SIGHUP with the file fixed clears it")
        func statusAndListReportSkippedManifests() throws {
            let world = try World()
            defer { world.close() }
            let folder = try ComponentsFolder(world)
            let kv2 = try folder.write("kv2.json", ["target": "Kv2", "actions": ["get"], "exec": "/bin/true"])
            let junk = folder.path + "/junk.json"
            try "{not json".write(toFile: junk, atomically: true, encoding: .utf8)
            try folder.write("notes.json", folder.notes("Notes"))
            let daemon = try world.daemon(["--components", folder.path])
            let cli = CLI(daemon)

            let status = try cli.json("status", ["Kv2"])
            #expect(status["state"] == "invalid", "\(status.jsonText)")
            #expect(status["manifest"] == .string(kv2), "\(status.jsonText)")
            #expect(status["problem"]?["member"] == "exec", "\(status.jsonText)")
            #expect(status["problem"]?["reason"]?.stringValue?.hasPrefix("must be a non-empty array of strings") == true)

            let list = try cli.json("list")
            let states = (list["targets"]?.arrayValue ?? []).map { "\($0["target"]?.stringValue ?? "?")=\($0["state"]?.stringValue ?? "?")" }
            #expect(states == ["Kv2=invalid", "Notes=activatable"], "\(list.jsonText)")
            let files = list["invalid_manifests"]?.arrayValue ?? []
            #expect(files.map { $0["file"] } == [.string(junk)], "\(list.jsonText)")
            #expect(files.first?["reason"]?.stringValue?.hasPrefix("is not valid JSON") == true, "\(list.jsonText)")

            let table = try cli.run("list", ["--table"])
            #expect(table.status == 0, "\(table)")
            let rows = ChildProcess.lines(table.stdout)
            #expect(rows.contains { $0.hasPrefix("Kv2 ") && $0.contains(" invalid ") && $0.contains(kv2 + #": member "exec": "#) }, "\(table.stdout)")
            #expect(rows.contains("Invalid manifests:"), "\(table.stdout)")
            #expect(rows.contains { $0.hasPrefix("  " + junk + ": is not valid JSON") }, "\(table.stdout)")

            let call = try cli.run("call", ["Kv2", "get"])
            #expect(call.status == 1, "\(call)")
            #expect(
                call.stderr.hasPrefix(
                    #"mediatorctl: target_not_found: no component serves target "Kv2"; its manifest is invalid: \#(kv2): member "exec": "#),
                "\(call)")

            // Fixed and reloaded: an ordinary activatable target; the junk file is still reported.
            try folder.write("kv2.json", folder.notes("Kv2"))
            daemon.process.signal(SIGHUP)
            try waitUntil("Kv2 to be activatable after SIGHUP\(daemon.process.logTail())") {
                try cli.json("status", ["Kv2"])["state"] == "activatable"
            }
            let reloaded = try cli.json("list")
            #expect(reloaded["invalid_manifests"]?.arrayValue?.map { $0["file"] } == [.string(junk)], "\(reloaded.jsonText)")
        }

        @Test("verify: silent and 0 for good files; every problem, as the daemon reports it, and 65 otherwise; --json")
        func verifyChecksFilesWithoutADaemon() throws {
            let world = try World()
            defer { world.close() }
            let components = world.directory.file("components.d")
            let policies = world.directory.file("policy.d")
            for folder in [components, policies] {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            }
            func write(_ text: String, _ path: String) throws -> String {
                try text.write(toFile: path, atomically: true, encoding: .utf8)
                return path
            }
            let interface = try write(#"{"target": "Notes", "actions": ["add"]}"#, world.directory.file("Notes.mediator.json"))
            let good = try write(#"{"target": "Notes", "interface": "\#(interface)", "exec": ["/bin/true"]}"#, components + "/notes.json")
            let policy = try write(#"{"rules": [{"match": {}, "allow": {"call": ["Notes/*"]}}]}"#, policies + "/notes.json")
            let ok = try CLI.raw(["verify", good, policy, components, policies])
            #expect(ok.status == 0 && ok.stdout.isEmpty && ok.stderr.isEmpty, "\(ok)")

            let kv2 = try write(#"{"target": "Kv2", "actions": ["a"], "exec": "/bin/kv2"}"#, components + "/kv2.json")
            let lost = try write(#"{"target": "Lost", "interface": "Lost.mediator.json", "exec": ["/bin/true"]}"#, components + "/lost.json")
            let badPolicy = try write(#"{"rules": [{"match": {}, "allow": {"call": ["nope"]}}]}"#, policies + "/bad.json")
            let bad = try CLI.raw(["verify", components, badPolicy])
            #expect(bad.status == 65, "\(bad)")
            #expect(bad.stdout.isEmpty, "\(bad)")
            #expect(ChildProcess.lines(bad.stderr) == [
                #"\#(kv2): member "exec": must be a non-empty array of strings, got "/bin/kv2""#,
                #"\#(lost): member "interface": \#(components)/Lost.mediator.json: does not exist"#,
                #"\#(badPolicy): member "rules[0].allow.call[0]": "nope" is not a call pattern: expected TARGET/ACTION, each side a name, NAME.* or * (such as "Notes/*")"#,
            ], "\(bad)")

            let json = try CLI.raw(["verify", "--json", kv2, world.directory.file("missing.json")])
            #expect(json.status == 65, "\(json)")
            #expect(try JSONValue.parse(json.stdout) == [
                ["file": .string(kv2), "member": "exec", "reason": #"must be a non-empty array of strings, got "/bin/kv2""#],
                ["file": .string(world.directory.file("missing.json")), "reason": "does not exist"],
            ], "\(json)")

            // The daemon skips the same file for the same reason.
            let daemon = try world.daemon(["--components", components])
            let status = try CLI(daemon).json("status", ["Kv2"])
            #expect(status["problem"] == (try JSONValue.parse(json.stdout)).arrayValue?.first, "\(status.jsonText)")
        }
    }
}
