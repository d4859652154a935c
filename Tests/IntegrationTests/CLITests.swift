import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// The real `mediatorctl` against a real daemon and components.
    @Suite("mediatorctl")
    struct Mediatorctl {
        @Test("call with key=value and with a JSON object; the caller is mediatorctl's own process")
        func callParams() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let cli = CLI(daemon)

            let keyValue = try cli.run("call", ["Notes", "echo", "n=5", "ok=true", "name=bob", #"s="5""#, "list=[1,2]", "empty="])
            #expect(keyValue.status == 0, "\(keyValue)")
            let result = try JSONValue.parse(keyValue.stdout)
            #expect(result["n"] == 5)
            #expect(result["ok"] == true)
            #expect(result["name"] == "bob")
            #expect(result["s"] == "5")
            #expect(result["list"] == [1, 2])
            #expect(result["empty"] == "")
            #expect(keyValue.stderr.isEmpty, "\(keyValue)")

            let json = try cli.run("call", ["Notes", "echo", #"{"nested": {"a": [1, "two", null]}, "f": 1.5}"#, "--name", "ctl-test"])
            #expect(json.status == 0, "\(json)")
            let echoed = try JSONValue.parse(json.stdout)
            #expect(echoed["nested"] == ["a": [1, "two", .null]])
            #expect(echoed["f"] == 1.5)
            #expect(echoed["caller"]?["name"] == "ctl-test")
            #expect(echoed["caller"]?["uid"]?.intValue == Int64(getuid()))
            // The pid is mediatorctl's, not ours (and not the daemon's).
            let pid = try #require(echoed["caller"]?["pid"]?.intValue)
            #expect(pid != Int64(getpid()) && pid != Int64(daemon.pid))

            // Output is one compact line when stdout is not a terminal.
            #expect(ChildProcess.lines(keyValue.stdout).count == 1)

            // A note added through the CLI is there for the next call.
            let added = try cli.json("call", ["Notes", "add", "text=from the cli", #"tags=["x"]"#])
            let id = try #require(added["id"]?.intValue)
            let note = try cli.json("call", ["Notes", "get", "id=\(id)"])
            #expect(note == ["id": .int(id), "text": "from the cli", "tags": ["x"]])
        }

        @Test("call --oneway sends without an id and prints nothing")
        func onewayCall() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let cli = CLI(daemon)
            let outcome = try cli.run("call", ["Notes", "add", "text=fire and forget", "--oneway"])
            #expect(outcome.status == 0 && outcome.stdout.isEmpty && outcome.stderr.isEmpty, "\(outcome)")
            try waitUntil("the oneway add to be stored") {
                let notes = try cli.json("call", ["Notes", "list"])["notes"]?.arrayValue ?? []
                return notes.contains { $0["text"] == "fire and forget" }
            }
        }

        @Test("Exit status 1 and 'mediatorctl: CODE: message' on stderr for an error reply")
        func errorReply() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let cli = CLI(daemon)

            let missing = try cli.run("call", ["Nobody", "x"])
            #expect(missing.status == 1, "\(missing)")
            #expect(missing.stdout.isEmpty)
            #expect(missing.stderr == "mediatorctl: target_not_found: no component serves target \"Nobody\"\n", "\(missing)")

            let component = try cli.run("call", ["Notes", "get", "id=404"])
            #expect(component.status == 1, "\(component)")
            #expect(component.stderr.hasPrefix("mediatorctl: not_found: "), "\(component)")

            let timeout = try cli.run("call", ["Notes", "sleep", "ms=30000", "--timeout", "0.3"])
            #expect(timeout.status == 1, "\(timeout)")
            #expect(timeout.stderr.hasPrefix("mediatorctl: timeout: "), "\(timeout)")
        }

        @Test("Exit status 2 for usage errors")
        func usageErrors() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let cli = CLI(daemon)
            for arguments in [[], ["Notes"], ["1bad", "x"], ["Notes", "echo", "novalue"], ["Notes", "echo", "{not json"],
                              ["Notes", "echo", "--timeout", "-1"]]
            {
                let outcome = try cli.run("call", arguments)
                #expect(outcome.status == 2, "call \(arguments): \(outcome)")
                #expect(!outcome.stderr.isEmpty, "call \(arguments): \(outcome)")
            }
            let noVerb = try CLI.raw(["frobnicate"])
            #expect(noVerb.status == 2, "\(noVerb)")
            let badEvent = try cli.run("emit", ["mediator registered"])
            #expect(badEvent.status == 2, "\(badEvent)")
        }

        @Test("Exit status 69 when the daemon is unreachable")
        func unreachable() throws {
            let world = try World()
            defer { world.close() }
            let nowhere = world.directory.socket("nobody")
            for (verb, arguments) in [("call", ["Notes", "echo"]), ("ping", []), ("list", []), ("emit", ["x.y"])] {
                let outcome = try CLI(socketPath: nowhere).run(verb, arguments)
                #expect(outcome.status == 69, "\(verb): \(outcome)")
                #expect(outcome.stderr.hasPrefix("mediatorctl: unreachable: "), "\(verb): \(outcome)")
                #expect(outcome.stderr.contains(nowhere), "\(verb): \(outcome)")
            }
            // A stale socket file: nobody listens.
            try makeStaleSocket(nowhere)
            let stale = try CLI(socketPath: nowhere).run("ping")
            #expect(stale.status == 69, "\(stale)")
        }

        @Test("A daemon that accepts but does not answer hello in time: timeout, exit status 1")
        func helloTimeout() throws {
            let world = try World()
            defer { world.close() }
            let path = world.directory.socket("silent")
            let listener = try makeSilentListener(path)
            defer { close(listener) }
            for seconds in ["0.001", "0.2"] {
                let outcome = try CLI(socketPath: path).run("ping", ["--timeout", seconds])
                #expect(outcome.status == 1, "--timeout \(seconds): \(outcome)")
                #expect(outcome.stderr.hasPrefix("mediatorctl: timeout: "), "--timeout \(seconds): \(outcome)")
                #expect(outcome.stderr.contains("no answer to hello"), "--timeout \(seconds): \(outcome)")
            }
        }

        @Test("--version prints the version that mediatord --version prints")
        func version() throws {
            let ctl = try CLI.raw(["--version"])
            #expect(ctl.status == 0, "\(ctl)")
            let daemon = try ChildProcess.run(Paths.mediatord, ["--version"])
            #expect(daemon.status == 0, "\(daemon)")
            #expect(ctl.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == MediatorVersion.current, "\(ctl)")
            #expect(ctl.stdout == daemon.stdout, "\(ctl) \(daemon)")
        }

        @Test("Exit status 69 when the daemon goes away before replying")
        func daemonGoesAway() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let call = try world.spawn(
                Paths.mediatorctl, ["call", "--socket", daemon.socketPath, "Notes", "sleep", "ms=60000"], label: "ctl-call")
            try waitUntil("the call to be in flight") {
                try daemon.listing("Notes")?["instances"]?[0]?["in_flight"]?.intValue == 1
            }
            daemon.kill()
            let ended = try call.waitForExit(within: .seconds(10))
            #expect(ended == .exited(69), "\(call.logTail())")
            #expect(call.stderr.hasPrefix("mediatorctl: disconnected: ") || call.stderr.hasPrefix("mediatorctl: unreachable: "),
                    "\(call.logTail())")
        }

        @Test("ping, list and describe")
        func listAndDescribe() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let notes = try world.notes(daemon)
            let cli = CLI(daemon)

            let ping = try cli.run("ping")
            #expect(ping.status == 0 && ping.stderr.isEmpty, "\(ping)")

            let list = try cli.json("list")
            let targets = try #require(list["targets"]?.arrayValue)
            #expect(targets.count == 1)
            let entry = try #require(targets.first)
            #expect(entry["target"] == "Notes")
            #expect(entry["description"] == "In-memory notes (Python example)")
            #expect(entry["actions"] == ["add", "get", "list", "echo", "sleep", "whoami", "notFound"])
            #expect(entry["instances"]?[0]?["pid"]?.intValue == Int64(notes.pid))
            #expect(entry["instances"]?[0]?["name"] == "notes-py")

            let description = try cli.json("describe", ["Notes"])
            #expect(description["target"] == "Notes")
            let add = try #require(description["actions"]?.arrayValue?.first { $0["name"] == "add" })
            #expect(add["params"]?["required"] == ["text"])
            #expect(add["params"]?["properties"]?["text"] == ["type": "string"])
            #expect(description["instances"]?[0]?["pid"]?.intValue == Int64(notes.pid))

            let unknown = try cli.run("describe", ["Nobody"])
            #expect(unknown.status == 1, "\(unknown)")
            #expect(unknown.stderr.hasPrefix("mediatorctl: target_not_found: "), "\(unknown)")

            // --pretty: indented, same value.
            let pretty = try cli.run("list", ["--pretty"])
            #expect(pretty.status == 0)
            #expect(ChildProcess.lines(pretty.stdout).count > 1)
            #expect(try JSONValue.parse(pretty.stdout) == list)
        }

        @Test("open: a URL's query items become string params; native actions are forbidden")
        func open() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let cli = CLI(daemon)
            let result = try cli.json("open", ["app://Notes/echo?x=1&y=a+b%20c&x=2&z=%C3%A9"])
            #expect(result["x"] == "2")  // the last repeated key wins
            #expect(result["y"] == "a+b c")  // + stays +
            #expect(result["z"] == "é")
            #expect(result["caller"]?["pid"] != nil)

            let component = try world.peer(daemon)
            _ = try component.register("Guarded", actions: ["nativeThing", ["name": "secret", "url": false], "open"])
            for action in ["nativeThing", "secret"] {
                let refused = try cli.run("open", ["app://Guarded/\(action)"])
                #expect(refused.status == 1, "\(refused)")
                #expect(refused.stderr.hasPrefix("mediatorctl: forbidden: "), "\(refused)")
            }
            try component.expectNothingPendingBeforePing()
            let missing = try cli.run("open", ["app://Nobody/x"])
            #expect(missing.stderr.hasPrefix("mediatorctl: target_not_found: "), "\(missing)")
        }

        @Test("listen prints the events that emit publishes")
        func listenAndEmit() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let cli = CLI(daemon)
            let listen = try world.spawn(
                Paths.mediatorctl, ["listen", "--socket", daemon.socketPath, "user.*", "greet"], label: "listen")
            // Ready once a probe event reaches it: emit reports one delivery.
            try waitUntil("listen to subscribe\(listen.logTail())") {
                if let ended = listen.termination { throw HarnessError("listen ended: \(ended)\(listen.logTail())") }
                return try cli.json("emit", ["user.probe"])["delivered"] == 1
            }
            #expect(try cli.json("emit", ["user.login", "name=ann", "n=2"]) == ["delivered": 1])
            #expect(try cli.json("emit", ["greet", #""hello""#]) == ["delivered": 1])
            #expect(try cli.json("emit", ["other.event", "5"]) == ["delivered": 0])
            #expect(try cli.json("emit", ["greet"]) == ["delivered": 1])

            let forbidden = try cli.run("emit", ["mediator.registered"])
            #expect(forbidden.status == 1 && forbidden.stderr.hasPrefix("mediatorctl: forbidden: "), "\(forbidden)")

            let lines = try listen.waitForLines(4)
            let events = try lines.map { try JSONValue.parse($0) }.filter { $0["event"] != "user.probe" }
            #expect(events == [
                ["event": "user.login", "data": ["name": "ann", "n": 2]],
                ["event": "greet", "data": "hello"],
                ["event": "greet"],
            ], "\(lines)")

            listen.signal(SIGTERM)
            #expect(try listen.waitForExit() == .exited(0), "\(listen.logTail())")
        }

        @Test("listen exits 69 when the daemon goes away")
        func listenLosesDaemon() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let cli = CLI(daemon)
            let listen = try world.spawn(Paths.mediatorctl, ["listen", "--socket", daemon.socketPath], label: "listen")
            try waitUntil("listen to subscribe\(listen.logTail())") {
                try cli.json("emit", ["probe"])["delivered"] == 1
            }
            daemon.kill()
            #expect(try listen.waitForExit() == .exited(69), "\(listen.logTail())")
            #expect(listen.stderr.hasPrefix("mediatorctl: "), "\(listen.logTail())")
        }

        @Test("serve --exec runs greeter.sh per call: result, failure with stderr and status, environment")
        func serveExec() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let serve = try world.serve(
                daemon, target: "Greeter", program: Paths.greeter, actions: ["hello", "fail", "env"])
            let cli = CLI(daemon)

            #expect(try cli.json("call", ["Greeter", "hello", "name=Ann"]) == ["greeting": "Hello, Ann!"])
            #expect(try cli.json("call", ["Greeter", "hello"]) == ["greeting": "Hello, world!"])
            #expect(try cli.json("call", ["Greeter", "env"]) == ["action": "env"])

            let failed = try cli.run("call", ["Greeter", "fail"])
            #expect(failed.status == 1, "\(failed)")
            let errorLines = ChildProcess.lines(failed.stderr)
            #expect(errorLines.first == "mediatorctl: exec_failed: something went wrong", "\(failed)")
            #expect(errorLines.count == 2 && (try? JSONValue.parse(errorLines[1])) == ["status": 3], "\(failed)")

            let undeclared = try cli.run("call", ["Greeter", "other"])
            #expect(undeclared.stderr.hasPrefix("mediatorctl: action_not_found: "), "\(undeclared)")

            let listing = try #require(try daemon.listing("Greeter"))
            #expect(listing["actions"] == ["hello", "fail", "env"])
            #expect(listing["instances"]?[0]?["pid"]?.intValue == Int64(serve.pid))

            serve.signal(SIGTERM)
            #expect(try serve.process.waitForExit() == .exited(0), "\(serve.process.logTail())")
            try daemon.waitForTargetGone("Greeter")
        }

        @Test("serve --exec passes the caller's credentials in the environment and stops a cancelled program")
        func serveExecEnvironmentAndCancel() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let script = world.directory.file("prog.sh")
            let marker = world.directory.file("terminated")
            try """
                #!/bin/sh
                case "$1" in
                who) printf '{"pid":%s,"uid":%s,"name":"%s","target":"%s","action":"%s","stdin":%s}\\n' \
                        "$MEDIATOR_CALLER_PID" "$MEDIATOR_CALLER_UID" "$MEDIATOR_CALLER_NAME" \
                        "$MEDIATOR_TARGET" "$MEDIATOR_ACTION" "$(cat)" ;;
                hang) trap 'echo yes > \(marker); exit 1' TERM; while :; do sleep 0.05; done ;;
                text) echo "  plain text  " ;;
                empty) ;;
                esac
                """.write(toFile: script, atomically: true, encoding: .utf8)
            chmod(script, 0o755)
            _ = try world.serve(daemon, target: "Prog", program: script, actions: [])  // notFound catch-all
            let peer = try world.peer(daemon)
            _ = try peer.result("mediator", "hello", params: ["protocol": 1, "name": "raw-peer"])

            let who = try peer.result("Prog", "who", params: ["k": "v"])
            #expect(who["pid"]?.intValue == Int64(getpid()))
            #expect(who["uid"]?.intValue == Int64(getuid()))
            #expect(who["name"] == "raw-peer")
            #expect(who["target"] == "Prog")
            #expect(who["action"] == "who")
            #expect(who["stdin"] == ["k": "v"])
            #expect(try peer.result("Prog", "text") == "plain text")
            #expect(try peer.result("Prog", "empty") == .null)

            let timedOut = try peer.call("Prog", "hang", timeoutMs: 300)
            #expect(timedOut.errorCode == "timeout", "\(timedOut.jsonText)")
            try waitUntil("the cancelled program to get SIGTERM") {
                FileManager.default.fileExists(atPath: marker)
            }
        }

        @Test("stream prints each partial result of countdown, then the final one")
        func streamCountdown() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.swiftExample(daemon)
            let cli = CLI(daemon)
            let outcome = try cli.run("stream", ["Weather", "countdown", "from=5"])
            #expect(outcome.status == 0, "\(outcome)")
            #expect(try outcome.jsonLines() == [5, 4, 3, 2, 1, ["done": true]])

            let empty = try cli.run("stream", ["Weather", "countdown", "from=0"])
            #expect(try empty.jsonLines() == [["done": true]], "\(empty)")

            let invalid = try cli.run("stream", ["Weather", "countdown"])
            #expect(invalid.status == 1, "\(invalid)")
            #expect(invalid.stderr.hasPrefix("mediatorctl: invalid_params: "), "\(invalid)")
            #expect(invalid.stderr.contains("from"), "\(invalid)")

            // A plain call to a streaming action gets only one (final) answer.
            let single = try cli.run("call", ["Weather", "countdown", "from=3"])
            #expect(single.status == 0, "\(single)")
            #expect(try single.jsonLines().count == 1, "\(single)")
        }

        @Test("call key=value types each value from the action's params schema: a string member takes 1 as \"1\"")
        func keyValueTypedBySchema() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try world.peer(daemon)
            let string: JSONValue = ["type": "string"]
            _ = try component.register("Kv", actions: [[
                "name": "set",
                "params": ["type": "object", "properties": ["key": string, "value": string], "required": ["key", "value"]],
            ]])
            let call = try world.spawn(
                Paths.mediatorctl, ["call", "--socket", daemon.socketPath, "Kv", "set", "key=a", "value=1", "--json"],
                label: "call-Kv")
            // The daemon checks the schema, so a value sent as 1 would not get here.
            let request = try component.incomingRequest()
            #expect(request["params"] == ["key": "a", "value": "1"], "\(request.jsonText)")
            try component.reply(to: request, result: ["stored": true])
            #expect(try call.waitForExit() == .exited(0), "\(call.logTail())")
            #expect(try JSONValue.parse(call.stdout) == ["stored": true])
        }

        @Test("Shell completion offers the running daemon's targets, and the actions of the target on the line")
        func completionFromTheDaemon() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            /// What `mediatorctl ---completion` (as the generated scripts call it) offers for
            /// the last word, whose text so far is `prefix`.
            func complete(_ positional: Int, _ words: [String], _ prefix: String) throws -> [String] {
                let outcome = try CLI.raw(
                    ["---completion", "call", "--", "positional@\(positional)", "\(words.count)", "\(prefix.count)"]
                        + words + [prefix])
                #expect(outcome.status == 0, "\(outcome)")
                return ChildProcess.lines(outcome.stdout).filter { !$0.isEmpty }
            }
            let socket = ["--socket", daemon.socketPath]
            #expect(try complete(0, ["mediatorctl", "call"] + socket, "") == ["Notes", "mediator"])
            #expect(try complete(0, ["mediatorctl", "call"] + socket, "No") == ["Notes"])
            // Options before the verb and option values are not the target.
            #expect(try complete(1, ["mediatorctl"] + socket + ["call", "--timeout", "5", "Notes"], "")
                    == ["add", "echo", "get", "list", "notFound", "sleep", "whoami"])
            #expect(try complete(1, ["mediatorctl", "call", "Notes"] + socket, "s") == ["sleep"])
            // An unknown target or no daemon: nothing, and no error.
            #expect(try complete(1, ["mediatorctl", "call", "Nobody"] + socket, "") == [])
            #expect(try complete(0, ["mediatorctl", "call", "--socket", world.directory.file("none.sock")], "") == ["mediator"])
        }

        @Test("The Swift example's typed forecast; its schema rejects bad params with invalid_params")
        func typedForecast() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.swiftExample(daemon)
            let cli = CLI(daemon)

            let forecast = try cli.json("call", ["Weather", "forecast", "city=Oslo", "days=2"])
            #expect(forecast["city"] == "Oslo")
            let days = try #require(forecast["days"]?.arrayValue)
            #expect(days.count == 2)
            #expect(days.map { $0["day"] } == [1, 2])
            for day in days {
                let (high, low) = (try #require(day["high"]?.intValue), try #require(day["low"]?.intValue))
                #expect(low < high)
                #expect(day["summary"]?.stringValue != nil)
            }
            // Deterministic: the same city gets the same weather.
            #expect(try cli.json("call", ["Weather", "forecast", #"{"city": "Oslo", "days": 2}"#]) == forecast)
            #expect(try cli.json("call", ["Weather", "forecast", "city=Oslo"])["days"]?.arrayValue?.count == 3)

            let missing = try cli.run("call", ["Weather", "forecast", "days=2"])
            #expect(missing.status == 1, "\(missing)")
            #expect(missing.stderr.hasPrefix("mediatorctl: invalid_params: "), "\(missing)")
            #expect(missing.stderr.contains("city"), "\(missing)")
            // key=value words are typed from the schema: city is a string, so 5 is "5";
            // a days that is no integer is bad usage, named, before any call.
            #expect(try cli.json("call", ["Weather", "forecast", "city=5", "days=1"])["city"] == "5")
            for days in ["two", "1.5"] {
                let rejected = try cli.run("call", ["Weather", "forecast", "city=Oslo", "days=\(days)"])
                #expect(rejected.status == 2, "\(days): \(rejected)")
                #expect(rejected.stderr.contains("days: expected integer"), "\(days): \(rejected)")
            }
            // key:=json bypasses the typing; the daemon's schema then refuses it.
            let forced = try cli.run("call", ["Weather", "forecast", "city:=5"])
            #expect(forced.stderr.hasPrefix("mediatorctl: invalid_params: "), "\(forced)")
            // In the schema but out of the handler's range: the component's own invalid_params.
            let tooMany = try cli.run("call", ["Weather", "forecast", "city=Oslo", "days=40"])
            #expect(tooMany.stderr.hasPrefix("mediatorctl: invalid_params: "), "\(tooMany)")

            // The schema is the daemon's: a raw call is refused before it reaches the component.
            let peer = try world.peer(daemon)
            let raw = try peer.call("Weather", "forecast", params: ["city": ["not", "a", "string"]])
            #expect(raw.errorCode == "invalid_params")
            #expect(raw["error"]?["message"]?.stringValue?.contains("city") == true, "\(raw.jsonText)")
        }
    }
}
