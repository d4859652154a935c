import Foundation
import MediatorProtocol
import Testing

extension Integration {
    /// Issue 11 end to end: the Weather component, generated from
    /// Examples/SwiftComponent/Weather.mediator.json, called by generated
    /// Swift and Python clients through the real mediatord.
    @Suite("Typed interfaces (generated code, real processes)")
    struct TypedInterfaceTests {
        /// Calls forecast (Oslo, 2 days) and prints typed fields as JSON, then
        /// streams countdown from 3; an error prints {"error": code, "message"}.
        /// Arguments: SOCKET [TARGET].
        static let pythonClient = #"""
            import json
            import sys

            import mediator
            import weather

            socket = sys.argv[1]
            with mediator.connect(socket=socket, name="typed-python-client") as client:
                typed = weather.WeatherClient(client)
                if len(sys.argv) > 2:
                    typed.TARGET = sys.argv[2]
                try:
                    forecast = typed.forecast(weather.ForecastParams(city="Oslo", days=2))
                    assert isinstance(forecast, weather.ForecastResult), type(forecast)
                    assert all(isinstance(day, weather.Day) for day in forecast.days)
                    print(json.dumps({"city": forecast.city,
                                      "days": [[d.day, d.summary, d.high, d.low, d.precipitation] for d in forecast.days]}))
                    print(json.dumps(list(typed.countdown(weather.CountdownParams(from_=3, interval_ms=5)))))
                except mediator.MediatorError as error:
                    print(json.dumps({"error": error.code, "message": error.message}))
            """#

        /// What the typed clients print for a forecast, from the raw result.
        static func expectedDays(_ forecast: JSONValue) throws -> [String] {
            let days = try #require(forecast["days"]?.arrayValue)
            return try days.map { day in
                let field = { (name: String) throws -> String in
                    let value = try #require(day[name])
                    return value.stringValue ?? value.jsonText
                }
                return "day \(try field("day")): \(try field("summary")), high \(try field("high")), "
                    + "low \(try field("low")), precipitation \(try field("precipitation"))%"
            }
        }

        @Test("The typed client's Weather.mediator.json is the component's own file")
        func typedClientSharesTheInterface() throws {
            let component = try Data(contentsOf: URL(fileURLWithPath: Paths.weatherInterface))
            let client = try Data(contentsOf: URL(fileURLWithPath: Paths.typedClientInterface))
            #expect(component == client)
        }

        @Test("A generated Swift service (Weather) called by a generated Swift client (example-typed-client)")
        func swiftServiceSwiftClient() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.swiftExample(daemon)
            let raw = try CLI(daemon).json("call", ["Weather", "forecast", "city=Bergen", "days=2"])

            let outcome = try ChildProcess.run(
                Paths.typedClient, ["--socket", daemon.socketPath, "--city", "Bergen", "--days", "2", "--from", "4"],
                directory: world.directory.path)
            #expect(outcome.status == 0, "\(outcome)")
            let lines = ChildProcess.lines(outcome.stdout).filter { !$0.isEmpty }
            #expect(lines == ["forecast for Bergen: 2 days"] + (try Self.expectedDays(raw)) + ["countdown: 4 3 2 1 done"])
        }

        @Test("generate --target: code from a live target's describe is the code from its file, but for the name of the source")
        func generateFromALiveTarget() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.swiftExample(daemon)
            for (language, file) in [("python", "weather.py"), ("swift", "Weather.swift")] {
                let live = world.directory.file("live-\(language)")
                let fromFile = world.directory.file("file-\(language)")
                let generatedLive = try CLI(daemon).run("generate", [language, "--target", "Weather", "--output", live])
                #expect(generatedLive.status == 0, "\(generatedLive)")
                let generatedFile = try CLI.raw(["generate", language, Paths.weatherInterface, "--output", fromFile])
                #expect(generatedFile.status == 0, "\(generatedFile)")
                let a = try String(contentsOfFile: live + "/" + file, encoding: .utf8)
                let b = try String(contentsOfFile: fromFile + "/" + file, encoding: .utf8)
                #expect(a.contains("describe of Weather"))
                #expect(
                    a.replacingOccurrences(of: "describe of Weather", with: "Weather.mediator.json") == b,
                    "\(language): the live interface is the file's")
            }
        }

        @Test("A Python service from generated code called by a generated Swift client")
        func pythonServiceSwiftClient() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let outcome = try ChildProcess.run(
                Paths.typedNotesClient, ["--socket", daemon.socketPath, "from Swift", "typed", "cross"],
                directory: world.directory.path)
            #expect(outcome.status == 0, "\(outcome)")
            let lines = ChildProcess.lines(outcome.stdout).filter { !$0.isEmpty }
            #expect(lines == ["added note 1", "note 1: from Swift [typed, cross]", "1 notes: 1 from Swift"], "\(outcome)")
            // What the Swift client stored is what the Python service holds, on the wire.
            let stored = try CLI(daemon).json("call", ["Notes", "get", "id=1"])
            #expect(stored == ["id": 1, "text": "from Swift", "tags": ["typed", "cross"]])
        }

        @Test("The same service called by a generated Python client: typed fields, and a streamed countdown")
        func swiftServicePythonClient() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.swiftExample(daemon)
            let raw = try CLI(daemon).json("call", ["Weather", "forecast", "city=Oslo", "days=2"])

            let python = try GeneratedPython(Paths.weatherInterface, in: world)
            #expect(FileManager.default.fileExists(atPath: python.folder + "/weather.py"))
            _ = try python.write("client.py", Self.pythonClient)
            let outcome = try python.run("client.py", [daemon.socketPath])
            #expect(outcome.status == 0, "\(outcome)")
            let lines = try outcome.jsonLines()
            try #require(lines.count == 2, "\(outcome)")
            let days = try #require(raw["days"]?.arrayValue).map { day -> JSONValue in
                ["day": day["day"] ?? .null, "summary": day["summary"] ?? .null, "high": day["high"] ?? .null,
                 "low": day["low"] ?? .null, "precipitation": day["precipitation"] ?? .null]
            }
            #expect(lines[0] == ["city": "Oslo", "days": .array(days.map { day in
                .array(["day", "summary", "high", "low", "precipitation"].map { day[$0] ?? .null })
            })])
            #expect(lines[1] == [3, 2, 1, ["done": true]])
        }

        @Test("A result that breaks the interface reaches the typed callers (Swift and Python) as invalid_result")
        func brokenResultIsInvalidResult() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            // A raw component with Weather's own specs, from the file, under another name.
            let interface = try JSONParser.parse(try String(contentsOfFile: Paths.weatherInterface, encoding: .utf8))
            let specs = try #require(interface["actions"]?.arrayValue)
            let peer = try world.peer(daemon)
            _ = try peer.register("WeatherBad", actions: specs)
            let bad: JSONValue = ["city": "Oslo", "days": [["day": "one", "summary": "fog", "high": 1, "low": 0, "precipitation": 5]]]

            // The generated Swift client.
            let swift = try world.spawn(
                Paths.typedClient, ["--socket", daemon.socketPath, "--target", "WeatherBad"], label: "typed-client-bad")
            let call = try peer.incomingRequest()
            #expect(call["action"] == "forecast")
            try peer.reply(to: call, result: bad)
            let refused = try peer.event("mediator.invalid_result")
            #expect(refused["data"]?["message"]?.stringValue?.contains("result.days[0].day") == true, "\(refused.jsonText)")
            #expect(try swift.waitForExit(within: .seconds(20)) == .exited(1), "\(swift.logTail())")
            #expect(swift.stderr.contains("invalid_result: "), "\(swift.logTail())")
            #expect(swift.stderr.contains("result.days[0].day"), "\(swift.logTail())")

            // The generated Python client.
            let python = try GeneratedPython(Paths.weatherInterface, in: world)
            _ = try python.write("client.py", Self.pythonClient)
            let script = try python.spawn("client.py", [daemon.socketPath, "WeatherBad"], in: world)
            let second = try peer.incomingRequest()
            try peer.reply(to: second, result: bad)
            #expect(try script.waitForExit(within: .seconds(20)) == .exited(0), "\(script.logTail())")
            let lines = try ChildProcess.lines(script.stdout).filter { !$0.isEmpty }.map { try JSONValue.parse($0) }
            #expect(lines.first?["error"] == "invalid_result", "\(script.logTail())")
            #expect(lines.first?["message"]?.stringValue?.contains("result.days[0].day") == true, "\(script.logTail())")
        }

        @Test("describe --json of the live Weather passes interface check, and diff against its file finds nothing breaking")
        func liveInterfaceMatchesTheFile() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.swiftExample(daemon)
            let described = try CLI(daemon).run("describe", ["Weather", "--json"])
            #expect(described.status == 0, "\(described)")
            let live = world.directory.file("Weather.live.mediator.json")
            try described.stdout.write(toFile: live, atomically: true, encoding: .utf8)

            let checked = try CLI.raw(["interface", "check", live])
            #expect(checked.status == 0 && checked.stderr.isEmpty, "\(checked)")
            for (old, new) in [(Paths.weatherInterface, live), (live, Paths.weatherInterface)] {
                let diff = try CLI.raw(["interface", "diff", old, new])
                #expect(diff.status == 0, "\(old) → \(new): \(diff)")
                #expect(diff.stdout.isEmpty, "\(old) → \(new): \(diff)")
            }
            // The specs are registered exactly as in the file (more, $defs and all).
            let file = try JSONParser.parse(try String(contentsOfFile: Paths.weatherInterface, encoding: .utf8))
            let liveJSON = try JSONValue.parse(described.stdout)
            #expect(liveJSON["actions"] == file["actions"], "\(described.stdout)")
        }
    }
}
