import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// The real `mediatorctl` passing descriptors through the real daemon
    /// to a Python component with `fds=True` (contract section 8).
    @Suite("mediatorctl: file descriptors")
    struct MediatorctlDescriptors {
        /// A component "Files" that reads what it is sent and answers with
        /// sealed memfds (and writes into a descriptor it is given).
        static let componentSource = #"""
            import os, sys
            sys.path.insert(0, sys.argv[2])
            import mediator

            service = mediator.Service("Files")

            @service.action("upper")
            def upper(params, ctx):
                with params["file"] as received:
                    data = os.read(received.fileno(), 1 << 20)
                return {"size": len(data), "blob": mediator.FD(mediator.memfd_from_bytes(data.upper(), "upper"), close=True)}

            @service.action("two")
            def two(params, ctx):
                return {"blobs": [mediator.FD(mediator.memfd_from_bytes(b"first"), close=True),
                                  mediator.FD(mediator.memfd_from_bytes(b"second"), close=True)]}

            @service.action("write")
            def write(params, ctx):
                with params["out"] as out:
                    os.write(out.fileno(), b"written by the component\n")
                return {"ok": True}

            @service.action("escape")
            def escape(params, ctx):
                return {"blob": mediator.FD(mediator.memfd_from_bytes(b"before\x1b]0;owned\x07after\n"), close=True)}

            @service.action("parts")
            def parts(params, ctx):
                for n in range(2):
                    ctx.send_partial({"blob": mediator.FD(mediator.memfd_from_bytes(b"part %d" % n), close=True)})
                return {"done": True}

            service.run(socket=sys.argv[1], reconnect=False, fds=True, on_registered=lambda: print("ready", flush=True))
            """#

        /// Starts the daemon and the component; waits until it is registered.
        static func start(_ world: World) throws -> CLI {
            let daemon = try world.daemon()
            let program = world.directory.file("files_component.py")
            try componentSource.write(toFile: program, atomically: true, encoding: .utf8)
            let component = try world.spawn(
                Paths.python, ["-u", program, daemon.socketPath, Paths.packageRoot + "/python"], label: "files-component")
            try component.waitForLine("ready", within: .seconds(20))
            return CLI(daemon)
        }

        @Test("--fd PATH sends a file; the memfd that comes back is printed after the result")
        func sendFileAndPrintMemfd() throws {
            let world = try World()
            defer { world.close() }
            let cli = try Self.start(world)
            let input = world.directory.file("input.txt")
            try "hello from a file\n".write(toFile: input, atomically: true, encoding: .utf8)

            let outcome = try cli.run("call", ["Files", "upper", "--fd", input, #"file:={"$fd": 0}"#])
            #expect(outcome.status == 0, "\(outcome)")
            let lines = ChildProcess.lines(outcome.stdout)
            let result = try JSONValue.parse(try #require(lines.first))
            #expect(result["size"] == 18)
            #expect(result["blob"]?["$fd"] == 0)
            #expect(result["blob"]?["path"]?.stringValue?.hasPrefix("/memfd:upper") == true, "\(result)")
            #expect(outcome.stdout.hasSuffix("HELLO FROM A FILE\n"), "\(outcome)")

            // --json: the result alone, each descriptor with its link target.
            let json = try cli.run("call", ["Files", "upper", "--fd", input, #"file:={"$fd": 0}"#, "--json"])
            #expect(json.status == 0, "\(json)")
            #expect(ChildProcess.lines(json.stdout).filter { !$0.isEmpty }.count == 1, "\(json)")
            #expect(try JSONValue.parse(json.stdout)["blob"]?["path"]?.stringValue?.hasPrefix("/memfd:upper") == true)
        }

        @Test("--fd N sends the shell's descriptor: --fd 1 lets the component write to our stdout")
        func sendInheritedDescriptor() throws {
            let world = try World()
            defer { world.close() }
            let cli = try Self.start(world)
            let outcome = try cli.run("call", ["Files", "write", "--fd", "1", #"out:={"$fd": 0}"#])
            #expect(outcome.status == 0, "\(outcome)")
            #expect(outcome.stdout.contains("written by the component\n"), "\(outcome)")
            #expect(outcome.stdout.contains(#""ok":true"#), "\(outcome)")
        }

        @Test("--save-fds DIR writes each descriptor to DIR/fd-I (stream: DIR/fd-N-I); stdout has the result only")
        func saveToDirectory() throws {
            let world = try World()
            defer { world.close() }
            let cli = try Self.start(world)
            let saved = world.directory.file("saved")
            #expect(mkdir(saved, 0o700) == 0)

            let outcome = try cli.run("call", ["Files", "two", "--save-fds", saved])
            #expect(outcome.status == 0, "\(outcome)")
            let result = try JSONValue.parse(outcome.stdout)
            #expect(result["blobs"]?.arrayValue?.map { $0["$fd"] } == [0, 1], "\(result)")
            #expect(ChildProcess.read(saved + "/fd-0") == "first")
            #expect(ChildProcess.read(saved + "/fd-1") == "second")
            var status = stat()
            #expect(stat(saved + "/fd-0", &status) == 0 && status.st_mode & 0o777 == 0o600)

            let stream = try cli.run("stream", ["Files", "parts", "--save-fds", saved])
            #expect(stream.status == 0, "\(stream)")
            #expect(try stream.jsonLines().count == 3, "\(stream)")
            #expect(ChildProcess.read(saved + "/fd-0-0") == "part 0")
            #expect(ChildProcess.read(saved + "/fd-1-0") == "part 1")
        }

        /// Runs `mediatorctl ARGS` with a terminal as its stdout (util-linux
        /// `script`, which also puts stderr on the terminal and gives back the
        /// exit status).
        static func onTerminal(_ cli: CLI, _ arguments: [String]) throws -> ChildProcess.Outcome {
            let command = ([Paths.mediatorctl, "--socket", cli.socketPath] + arguments).map { "'\($0)'" }.joined(separator: " ")
            return try ChildProcess.run(Self.script, ["-qec", command, "/dev/null"])
        }

        static let script = "/usr/bin/script"

        @Test("On a terminal, content that is not plain text is refused (exit 1) unless --fds-to-stdout; text is printed",
              .enabled(if: FileManager.default.isExecutableFile(atPath: script), "needs util-linux script for a terminal"))
        func terminal() throws {
            let world = try World()
            defer { world.close() }
            let cli = try Self.start(world)
            let input = world.directory.file("input.txt")
            try "plain text\n".write(toFile: input, atomically: true, encoding: .utf8)

            let text = try Self.onTerminal(cli, ["call", "Files", "upper", "--fd", input, #"file:={"$fd": 0}"#])
            #expect(text.status == 0, "\(text)")
            #expect(text.stdout.contains("PLAIN TEXT"), "\(text)")

            let refused = try Self.onTerminal(cli, ["call", "Files", "escape"])
            #expect(refused.status == 1, "\(refused)")
            #expect(!refused.stdout.contains("\u{1b}]0;owned") && !refused.stdout.contains("after"), "\(refused)")
            #expect(refused.stdout.contains("descriptor 0 is not plain text"), "\(refused)")

            let forced = try Self.onTerminal(cli, ["call", "Files", "escape", "--fds-to-stdout"])
            #expect(forced.status == 0, "\(forced)")
            #expect(forced.stdout.contains("\u{1b}]0;owned\u{07}after"), "\(forced)")
        }

        @Test("Refusals: fds_not_supported is exit status 1; a bad --fd or an unmatched {\"$fd\": I} is bad usage")
        func refusals() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let cli = CLI(daemon)
            let input = world.directory.file("input.txt")
            try "x".write(toFile: input, atomically: true, encoding: .utf8)

            let refused = try cli.run("call", ["Notes", "echo", "--fd", input, #"f:={"$fd": 0}"#])
            #expect(refused.status == 1, "\(refused)")
            #expect(refused.stderr.hasPrefix("mediatorctl: fds_not_supported: "), "\(refused)")

            let missing = try cli.run("call", ["Notes", "echo", "--fd", world.directory.file("nothing")])
            #expect(missing.status == 2 && missing.stderr.contains("--fd "), "\(missing)")
            let closed = try cli.run("call", ["Notes", "echo", "--fd", "99"])
            #expect(closed.status == 2 && closed.stderr.contains("--fd 99"), "\(closed)")
            let unmatched = try cli.run("call", ["Notes", "echo", #"f:={"$fd": 0}"#])
            #expect(unmatched.status == 2 && unmatched.stderr.contains("needs an I-th --fd"), "\(unmatched)")
        }
    }
}
