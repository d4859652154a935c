import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// Routing, ids and the daemon's error answers, over raw sockets, with
    /// the Python example component and raw components.
    @Suite("Routing")
    struct Routing {
        @Test("Replies carry the caller's ids; a fast call overtakes a slow one")
        func repliesOutOfOrderWithTheirIDs() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let peer = try world.peer(daemon)

            // The slow call's 1.5 s is the slack: the echoes take milliseconds.
            try peer.request("Notes", "sleep", params: ["ms": 1500], id: 1)
            let fastIDs: [JSONValue] = ["a", 2, "c-3", 4_000_000_000, "e"]
            for (index, id) in fastIDs.enumerated() {
                try peer.request("Notes", "echo", params: ["n": .int(Int64(index))], id: id)
            }
            var seen: [JSONValue] = []
            for _ in fastIDs {
                let reply = try peer.receive()
                let id = try #require(reply["id"])
                let index = try #require(fastIDs.firstIndex(of: id), "unexpected reply \(reply.jsonText)")
                #expect(reply["result"]?["n"] == .int(Int64(index)), "reply \(reply.jsonText)")
                seen.append(id)
            }
            #expect(Set(seen) == Set(fastIDs))
            let slow = try peer.receive(within: .seconds(20))
            #expect(slow["id"] == 1)
            #expect(slow["result"] == ["slept": 1500])
        }

        @Test("A component's out-of-order replies reach each caller under the caller's own id")
        func rawComponentAnswersInReverse() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try world.peer(daemon)
            _ = try component.register("Rev", actions: ["x"])
            let caller = try world.peer(daemon)

            try caller.request("Rev", "x", params: ["n": 1], id: 10)
            try caller.request("Rev", "x", params: ["n": 2], id: "eleven")
            let first = try component.incomingRequest()
            let second = try component.incomingRequest()
            #expect(first["params"] == ["n": 1])
            #expect(second["params"] == ["n": 2])
            #expect(first["action"] == "x")
            #expect(first["target"] == "Rev")
            #expect(first["id"] != nil && second["id"] != nil && first["id"] != second["id"])
            #expect(first["caller"]?["pid"]?.intValue == Int64(getpid()))

            try component.reply(to: second, result: ["got": 2])
            try component.reply(to: first, result: ["got": 1])
            let replyA = try caller.receive()
            let replyB = try caller.receive()
            #expect(replyA == ["id": "eleven", "result": ["got": 2]])
            #expect(replyB == ["id": 10, "result": ["got": 1]])
        }

        @Test("Errors a component returns pass through unchanged")
        func componentErrorsPassThrough() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let peer = try world.peer(daemon)
            let reply = try peer.call("Notes", "get", params: ["id": 999])
            #expect(reply.errorCode == "not_found", "\(reply.jsonText)")
            #expect(reply["error"]?["message"]?.stringValue?.contains("999") == true)
        }

        @Test("notFound gets undeclared actions; action_not_found and target_not_found otherwise")
        func notFoundRouting() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let peer = try world.peer(daemon)

            let fallback = try peer.result("Notes", "undeclared", params: ["q": 1, "s": "x"])
            #expect(fallback == ["fallback": "undeclared", "params": ["q": 1, "s": "x"]])

            let component = try world.peer(daemon)
            _ = try component.register("Plain", actions: ["only"])
            let missing = try peer.call("Plain", "other")
            #expect(missing.errorCode == "action_not_found", "\(missing.jsonText)")
            let nobody = try peer.call("Nobody", "x")
            #expect(nobody.errorCode == "target_not_found", "\(nobody.jsonText)")
            #expect(nobody["error"]?["message"]?.stringValue?.contains("Nobody") == true)
            try component.expectNothingPendingBeforePing()  // nothing was forwarded
        }

        @Test("Oneway requests get no response, not even an error")
        func onewayRequests() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let peer = try world.peer(daemon)
            try peer.send(["target": "Notes", "action": "add", "params": ["text": "quiet"]])
            try peer.send(["target": "Nobody", "action": "x"])
            try peer.expectNothingPendingBeforePing()
            try waitUntil("the oneway add to be stored") {
                let notes = try peer.result("Notes", "list")["notes"]?.arrayValue ?? []
                return notes.contains { $0["text"] == "quiet" }
            }
        }

        @Test("Calls to a pool spread over its instances (round robin, then fewest in flight)")
        func poolSpreadsCalls() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let first = try world.notes(daemon, pool: true)
            let second = try world.notes(daemon, pool: true)
            try daemon.waitForTarget("Notes", instances: 2)
            let instances = try #require(try daemon.listing("Notes")?["instances"]?.arrayValue)
            #expect(Set(instances.compactMap { $0["pid"]?.intValue }) == [Int64(first.pid), Int64(second.pid)])

            let peer = try world.peer(daemon)
            var counts: [Int64: Int] = [:]
            for _ in 0..<10 {
                let pid = try #require(try peer.result("Notes", "whoami")["pid"]?.intValue)
                counts[pid, default: 0] += 1
            }
            #expect(Set(counts.keys) == [Int64(first.pid), Int64(second.pid)], "\(counts)")
            // With no call in flight every choice is a tie: strictly in turn.
            #expect(counts.values.allSatisfy { $0 == 5 }, "\(counts)")

            // One instance busy with a long call: the next calls all go to the other.
            let slow = try peer.request("Notes", "sleep", params: ["ms": 60_000])
            var idle: Set<Int64> = []
            for _ in 0..<4 {
                idle.insert(try #require(try peer.result("Notes", "whoami")["pid"]?.intValue))
            }
            #expect(idle.count == 1, "calls went to \(idle) while one instance was busy")
            let cancel = try peer.call("mediator", "cancel", params: ["id": slow])
            #expect(cancel["result"] != nil, "\(cancel.jsonText)")
            let cancelled = try peer.response(to: slow)
            #expect(cancelled.errorCode == "cancelled", "\(cancelled.jsonText)")
        }

        @Test("Two exclusive registrations of one target: the second is already_registered")
        func exclusiveTargetIsTaken() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let other = try world.peer(daemon)
            let reply = try other.call("mediator", "register", params: ["target": "Notes", "actions": ["x"]])
            #expect(reply.errorCode == "already_registered", "\(reply.jsonText)")
            let forbidden = try other.call("mediator", "unregister", params: ["target": "Notes"])
            #expect(forbidden.errorCode == "forbidden", "\(forbidden.jsonText)")
        }

        @Test("hello gives the daemon's facts; an unknown protocol is refused")
        func hello() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--max-frame-bytes", "65536"])
            let peer = try world.peer(daemon)
            let hello = try peer.result("mediator", "hello", params: ["protocol": 1, "name": "itest"])
            #expect(hello["protocol"] == 1)
            #expect(hello["server"] == "mediatord")
            #expect(hello["max_frame"] == 65536)
            #expect(hello["version"]?.stringValue != nil)
            #expect(hello["connection"]?.intValue != nil)
            let refused = try peer.call("mediator", "hello", params: ["protocol": 99])
            #expect(refused.errorCode == "unsupported_protocol", "\(refused.jsonText)")
        }

        @Test("Over the per-connection limit on calls in flight: overloaded")
        func callsInFlightLimit() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--max-calls-in-flight", "3"])
            let component = try world.peer(daemon)
            _ = try component.register("Hang", actions: ["wait"])
            let caller = try world.peer(daemon)
            let ids = try (0..<3).map { _ in try caller.request("Hang", "wait") }
            for _ in ids { _ = try component.incomingRequest() }
            let fourth = try caller.call("Hang", "wait")
            #expect(fourth.errorCode == "overloaded", "\(fourth.jsonText)")
        }
    }
}
