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

        @Test("Codes a component invents count as other, and stats stays readable whatever was counted (issue 23)")
        func boundedCodesAndPagedReplies() throws {
            let world = try World()
            defer { world.close() }
            // A quarter of this is a page: 64 KiB.
            let daemon = try world.daemon(["--max-outbound-bytes", String(256 << 10)])
            // 400 actions of one target (about 280 KiB of statistics), each
            // answered with a 4 KiB code (1.6 MiB more if kept): one reply
            // holding them would be over the outbound limit.
            let actions = 400
            let component = try world.peer(daemon)
            _ = try component.register("Hostile", actions: (0..<actions).map { .string("a\($0)") })
            let caller = try world.peer(daemon)
            let longCode = String(repeating: "x", count: 4096)
            for number in 0..<actions {
                let id = try caller.request("Hostile", "a\(number)")
                let request = try component.incomingRequest()
                try component.reply(to: request, error: number == 0 ? "Not Valid!" : longCode, message: "no")
                #expect(try caller.response(to: id).errorCode == (number == 0 ? "Not Valid!" : longCode))
            }

            let cli = CLI(daemon)
            let stats = try cli.json("stats")
            let hostile = try #require(stats["targets"]?.arrayValue?.first { $0["target"] == "Hostile" })
            let entries = hostile["actions"]?.arrayValue ?? []
            #expect(entries.compactMap { $0["action"]?.stringValue } == (0..<actions).map { "a\($0)" })
            #expect(entries.allSatisfy { $0["answers"] == ["ok": 0, "other": 1] })
            #expect(stats["daemon"]?["backlog_disconnects"] == 0)
            let alone = try cli.json("stats", ["Hostile"])
            #expect(alone["targets"]?.arrayValue?.count == 1)
            #expect(alone["targets"]?.arrayValue?.first?["actions"]?.arrayValue?.count == actions)
            let top = try cli.run("top", ["--iterations", "1", "--target", "Hostile"])
            #expect(top.status == 0, "\(top)")
            // One page, raw: within the page size, ending inside the target.
            let page = try caller.call("mediator", "stats", params: ["target": "Hostile"])
            let text = page.encoded.count
            #expect(text < (64 << 10) + 4096, "\(text) bytes")
            #expect(page["result"]?["next"] == "Hostile" && page["result"]?["next_action"] != nil)
            let after = try cli.json("stats")
            #expect(after["daemon"]?["backlog_disconnects"] == 0)
        }
    }
}
