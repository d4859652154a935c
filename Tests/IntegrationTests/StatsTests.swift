import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// `mediator/stats` through the real `mediatorctl stats` (issue 12).
    @Suite("Statistics")
    struct Statistics {
        @Test("mediatorctl stats counts results, errors and a slow call of a real component")
        func statsOfNotes() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--slow-call-threshold-ms", "50"])
            _ = try world.notes(daemon)
            let cli = CLI(daemon)
            for text in ["one", "two"] { _ = try cli.json("call", ["Notes", "add", "text=\(text)"]) }
            let missing = try cli.run("call", ["Notes", "get", "id=999"])
            #expect(missing.status == 1, "\(missing)")
            _ = try cli.json("call", ["Notes", "sleep", "ms=120"])

            let stats = try cli.json("stats")
            #expect(stats["daemon"]?["calls_routed"] == 4)
            #expect(stats["daemon"]?["calls_in_flight"] == 0)
            #expect((stats["daemon"]?["connections_opened"]?.intValue ?? 0) >= 5)
            let notes = try #require(stats["targets"]?.arrayValue?.first { $0["target"] == "Notes" })
            #expect(notes["calls"] == 4)
            #expect(notes["errors"] == 1)
            let actions = notes["actions"]?.arrayValue ?? []
            let add = try #require(actions.first { $0["action"] == "add" })
            #expect(add["calls"] == 2)
            #expect(add["answers"] == ["ok": 2])
            #expect(add["latency"]?["count"] == 2)
            let get = try #require(actions.first { $0["action"] == "get" })
            #expect(get["answers"]?["ok"] == 0)
            #expect(get["errors"] == 1)
            let sleep = try #require(actions.first { $0["action"] == "sleep" })
            #expect((sleep["latency"]?["p50_ms"]?.doubleValue ?? 0) >= 60)
            let slow = stats["slow_calls"]?["calls"]?.arrayValue ?? []
            #expect(slow.count == 1)
            #expect(slow.first?["target"] == "Notes" && slow.first?["action"] == "sleep" && slow.first?["code"] == "ok")
            #expect((slow.first?["duration_ms"]?.doubleValue ?? 0) >= 120)
            #expect(slow.first?["uid"]?.intValue == Int64(getuid()))
            let uid = stats["uids"]?.arrayValue?.first { $0["uid"]?.intValue == Int64(getuid()) }
            #expect(uid?["connections"] != nil)

            // One target, as a table.
            let table = try cli.run("stats", ["Notes", "--table"])
            #expect(table.status == 0, "\(table)")
            #expect(table.stdout.contains("TARGET/ACTION"))
            let lines = ChildProcess.lines(table.stdout)
            #expect(lines.contains { $0.hasPrefix("Notes ") && $0.contains(" 4 ") })
            #expect(lines.contains { $0.hasPrefix("  sleep ") })
            #expect(table.stdout.contains("SLOW CALLS"))
            // Another target only: no Notes.
            let other = try cli.json("stats", ["Weather"])
            #expect(other["targets"] == [])
        }
    }
}
