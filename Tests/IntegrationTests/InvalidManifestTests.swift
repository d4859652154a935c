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
    }
}
