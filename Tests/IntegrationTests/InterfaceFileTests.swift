import Foundation
import MediatorInterface
import MediatorProtocol
import Testing

extension Integration {
    /// Interface files (issue 11) with the real mediatorctl and mediatord.
    @Suite("Interface files")
    struct InterfaceFileTests {
        static let notes = #"""
            {"target": "Notes", "description": "Keeps short notes",
             "actions": [
               {"name": "add", "params": {"type": "object", "required": ["text"],
                                          "properties": {"text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}}},
               "get", "list", "echo", "sleep", "whoami"]}
            """#

        private static func write(_ text: String, _ name: String, in world: World) throws -> String {
            let path = world.directory.file(name)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        @Test("interface check: silent and 0 for good files, every problem and 1 otherwise; diff: 0, 1 on a breaking change, 2 on bad files")
        func checkAndDiffExitStatuses() throws {
            let world = try World()
            defer { world.close() }
            let good = try Self.write(Self.notes, "Notes.mediator.json", in: world)
            let bad = try Self.write(
                ##"{"target": "Notes", "actions": [{"name": "a", "more": true, "oneway": true, "params": {"$ref": "#/$defs/X"}}]}"##,
                "bad.mediator.json", in: world)
            let compatible = try Self.write(
                Self.notes.replacingOccurrences(of: #""whoami"]"#, with: #""whoami", "count"]"#), "compatible.json", in: world)
            let breaking = try Self.write(
                Self.notes.replacingOccurrences(of: #""required": ["text"]"#, with: #""required": ["text", "tags"]"#),
                "breaking.json", in: world)
            let missing = world.directory.file("missing.json")

            let ok = try CLI.raw(["interface", "check", good, compatible])
            #expect(ok.status == 0 && ok.stdout.isEmpty && ok.stderr.isEmpty, "\(ok)")

            let problems = try CLI.raw(["interface", "check", good, bad, missing])
            #expect(problems.status == 1, "\(problems)")
            #expect(problems.stdout.isEmpty)
            #expect(
                problems.stderr == """
                    \(bad): actions[0]: "more" and "oneway" exclude each other: a oneway action never answers
                    \(bad): actions[0].params.$ref: refers to nothing: no "X" in the "$defs" of actions[0].params
                    \(missing): cannot be read: No such file or directory

                    """, "\(problems)")

            let same = try CLI.raw(["interface", "diff", good, good])
            #expect(same.status == 0 && same.stdout.isEmpty, "\(same)")
            let added = try CLI.raw(["interface", "diff", good, compatible])
            #expect(added.status == 0 && added.stdout == "compatible actions.count: action added\n", "\(added)")
            let broken = try CLI.raw(["interface", "diff", good, breaking])
            #expect(broken.status == 1, "\(broken)")
            #expect(broken.stdout == "breaking actions.add.params.properties.tags: param made required\n", "\(broken)")
            let json = try CLI.raw(["interface", "diff", "--json", breaking, good])
            #expect(json.status == 0, "\(json)")
            #expect(
                try JSONValue.parse(json.stdout)
                    == [["breaking": false, "member": "actions.add.params.properties.tags", "change": "param made optional"]])

            for (old, new) in [(good, missing), (bad, good)] {
                let unusable = try CLI.raw(["interface", "diff", old, new])
                #expect(unusable.status == 2 && unusable.stdout.isEmpty && !unusable.stderr.isEmpty, "\(unusable)")
            }
            let usage = try CLI.raw(["interface", "diff", good])
            #expect(usage.status == 2, "\(usage)")
        }

        @Test("describe --json of a live target (and of the daemon) is a valid interface file")
        func describeIsAnInterfaceFile() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            _ = try world.swiftExample(daemon)
            let cli = CLI(daemon)
            for target in ["Notes", "Weather", "mediator"] {
                let described = try cli.run("describe", [target, "--json"])
                #expect(described.status == 0, "\(described)")
                let problems = InterfaceFile.check(bytes: Array(described.stdout.utf8), file: target)
                #expect(problems.isEmpty, "\(target): \(problems.map(\.description))\n\(described.stdout)")
                let path = try Self.write(described.stdout, "\(target).mediator.json", in: world)
                let checked = try CLI.raw(["interface", "check", path])
                #expect(checked.status == 0 && checked.stderr.isEmpty, "\(checked)")
            }
            // What a live component declares compares with itself as no change.
            let path = world.directory.file("Notes.mediator.json")
            let same = try CLI.raw(["interface", "diff", path, path])
            #expect(same.status == 0 && same.stdout.isEmpty, "\(same)")
        }

        @Test("A manifest with an interface file: its schemas are enforced before the component starts, and a good call starts it")
        func manifestWithAnInterfaceFile() throws {
            let world = try World()
            defer { world.close() }
            let folder = world.directory.file("components")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Self.notes.write(toFile: folder + "/../Notes.mediator.json", atomically: true, encoding: .utf8)
            let manifest: JSONValue = [
                "target": "Notes", "interface": "../Notes.mediator.json",
                "exec": [.string(Paths.python), "-u", .string(Paths.notesComponent), "--target", "Notes"],
            ]
            try manifest.jsonText.write(toFile: folder + "/notes.json", atomically: true, encoding: .utf8)
            let daemon = try world.daemon(["--components", folder])
            let cli = CLI(daemon)

            let known = try cli.json("describe", ["Notes"])
            #expect(known["state"] == "activatable", "\(known.jsonText)")
            #expect(known["description"] == "Keeps short notes", "\(known.jsonText)")
            #expect(known["actions"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
                    == ["add", "get", "list", "echo", "sleep", "whoami"], "\(known.jsonText)")

            // text=5 would be typed "5" from the schema; := sends the number.
            let refused = try cli.run("call", ["Notes", "add", "text:=5"])
            #expect(refused.status == 1, "\(refused)")
            #expect(refused.stderr.hasPrefix("mediatorctl: invalid_params: params.text: expected string"), "\(refused)")
            #expect(try cli.json("status", ["Notes"])["state"] == "activatable", "a refused call started the component")

            let added = try cli.run("call", ["Notes", "add", "text=hello"], within: .seconds(30))
            #expect(added.status == 0, "\(added)")
            #expect(try JSONValue.parse(added.stdout)["id"] != nil, "\(added)")
            #expect(try cli.json("status", ["Notes"])["state"] == "running")
        }

        @Test("generate, and mediator-generate (the plugin's tool), refuse what interface check refuses, with its problems")
        func generateRefusesWhatCheckRefuses() throws {
            let world = try World()
            defer { world.close() }
            // 70 levels of arrays: over the 64 the check allows (swiftc took minutes on such output).
            var schema = #"{"type": "string"}"#
            for _ in 0..<70 { schema = #"{"type": "array", "items": "# + schema + "}" }
            let deep = try Self.write(#"{"target": "Deep", "actions": [{"name": "a", "params": "# + schema + "}]}", "Deep.mediator.json", in: world)
            // Over 16 MiB: a valid file but for its size.
            let padding = String(repeating: "x", count: InterfaceFile.maxBytes)
            let large = try Self.write(#"{"target": "Large", "description": ""# + padding + #"", "actions": ["a"]}"#, "Large.mediator.json", in: world)
            let output = world.directory.file("out")
            for file in [deep, large] {
                let checked = try CLI.raw(["interface", "check", file])
                #expect(checked.status == 1 && !checked.stderr.isEmpty, "\(checked)")
                for language in ["swift", "python"] {
                    let generated = try CLI.raw(["generate", language, file, "--output", output])
                    #expect(generated.status == 1, "\(generated)")
                    #expect(generated.stderr == checked.stderr, "\(generated)")
                    #expect(generated.stdout.isEmpty, "\(generated)")
                    let tool = try ChildProcess.run(
                        Paths.executable("mediator-generate"), [language, file, output + "/x." + language], within: .seconds(30))
                    #expect(tool.status == 1, "\(tool)")
                    #expect(tool.stderr == "mediator-generate: " + checked.stderr, "\(tool)")
                }
            }
            #expect((try? FileManager.default.contentsOfDirectory(atPath: output)) ?? [] == [])
        }
    }
}
