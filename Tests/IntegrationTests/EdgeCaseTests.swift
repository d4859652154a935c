import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// Corners of the contract, over raw sockets.
    @Suite("Edge cases")
    struct EdgeCases {
        @Test("Malformed requests are bad_request with their id, and the connection stays usable")
        func malformedRequests() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let peer = try world.peer(daemon)
            let cases: [(String, JSONValue)] = [
                (#"{"id":1,"target":"mediator","action":"ping","params":[1]}"#, 1),
                (#"{"id":2,"target":"mediator","action":"ping","timeout_ms":0}"#, 2),
                (#"{"id":3,"target":"mediator","action":"ping","timeout_ms":-5}"#, 3),
                (#"{"id":4,"target":"mediator","action":"ping","timeout_ms":"soon"}"#, 4),
                (#"{"id":5,"target":"mediator","action":"9bad"}"#, 5),
                (#"{"id":6,"target":5,"action":"ping"}"#, 6),
            ]
            for (line, id) in cases {
                try peer.sendLine(line)
                let reply = try peer.receive()
                #expect(reply.errorCode == "bad_request", "\(line) → \(reply.jsonText)")
                #expect(reply["id"] == id, "\(line) → \(reply.jsonText)")
            }
            let longID = String(repeating: "i", count: 300)
            try peer.sendLine(#"{"id":"\#(longID)","target":"mediator","action":"ping"}"#)
            let long = try peer.receive()
            #expect(long.errorCode == "bad_request", "\(long.jsonText)")
            try peer.sendLine(#"{"id":{"a":1},"target":"mediator","action":"ping"}"#)
            #expect(try peer.receive().errorCode == "bad_request")
            // A string id of exactly 256 bytes is fine.
            let maxID = JSONValue.string(String(repeating: "j", count: 256))
            try peer.request("mediator", "ping", id: maxID)
            #expect(try peer.receive() == ["id": maxID, "result": [:]])
            // A response nobody waits for is ignored.
            try peer.send(["id": 999, "result": "stray"])
            try peer.expectNothingPendingBeforePing()
        }

        @Test("register: mediator is reserved, bad specs refused, unregister rules, unregistered event")
        func registrationRules() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let watcher = try world.peer(daemon)
            _ = try watcher.result("mediator", "subscribe", params: ["events": ["mediator.*"]])
            let peer = try world.peer(daemon)
            #expect(try peer.call("mediator", "register", params: ["target": "mediator", "actions": ["x"]]).errorCode == "bad_request")
            #expect(try peer.call("mediator", "register", params: ["target": "Bad Name", "actions": ["x"]]).errorCode == "bad_request")
            #expect(try peer.call("mediator", "register", params: ["target": "T", "actions": ["bad action"]]).errorCode == "bad_request")
            #expect(try peer.call("mediator", "register", params: ["target": "T", "actions": ["x"], "mode": "shared"]).errorCode == "bad_request")
            #expect(try peer.call("mediator", "unregister", params: ["target": "Nobody"]).errorCode == "target_not_found")

            let registered = try peer.register("T", actions: ["x"])
            #expect(registered["target"] == "T")
            let instance = try #require(registered["instance"])
            let event = try watcher.event("mediator.registered")
            #expect(event["data"] == ["target": "T", "instance": instance, "pid": .int(Int64(getpid()))])

            #expect(try peer.result("mediator", "unregister", params: ["target": "T"]) == [:])
            let gone = try watcher.event("mediator.unregistered")
            #expect(gone["data"] == ["target": "T", "instance": instance, "reason": "unregistered"])
            #expect(try peer.call("T", "x").errorCode == "target_not_found")

            // One connection, several targets; all end with the connection.
            let multi = try daemon.connect()
            _ = try multi.register("A1", actions: ["x"])
            _ = try multi.register("A2", actions: ["x"])
            try daemon.waitForTarget("A2")
            multi.close()
            try daemon.waitForTargetGone("A1")
            try daemon.waitForTargetGone("A2")
        }

        @Test("A pool: every instance must say pool and declare equal specs")
        func poolRules() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let first = try world.peer(daemon)
            _ = try first.register("P", actions: ["x", "y"], mode: "pool")
            let differing = try world.peer(daemon)
            let refused = try differing.call("mediator", "register", params: ["target": "P", "actions": ["x"], "mode": "pool"])
            #expect(refused.errorCode == "already_registered", "\(refused.jsonText)")
            let exclusive = try differing.call("mediator", "register", params: ["target": "P", "actions": ["x", "y"]])
            #expect(exclusive.errorCode == "already_registered", "\(exclusive.jsonText)")
            let second = try world.peer(daemon)
            let joined = try second.register("P", actions: ["x", "y"], mode: "pool")
            #expect(joined["instance"] != nil)
            try daemon.waitForTarget("P", instances: 2)
        }

        @Test("more: partial responses reach the caller and each restarts the timeout")
        func moreResponses() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try world.peer(daemon)
            _ = try component.register("S", actions: ["count"])
            let caller = try world.peer(daemon)

            // Three partials 700 ms apart under a 1500 ms timeout: 2.1 s in
            // all, so the call survives only if each partial restarts it.
            try caller.request("S", "count", id: "s", timeoutMs: 1500, more: true)
            let request = try component.incomingRequest()
            #expect(request["more"] == true)
            for n in 1...3 {
                sleep(for: .milliseconds(700))
                try component.send(["id": request["id"]!, "result": .int(Int64(n)), "continues": true])
                let partial = try caller.receive()
                #expect(partial == ["id": "s", "result": .int(Int64(n)), "continues": true])
            }
            try component.reply(to: request, result: "done")
            #expect(try caller.receive() == ["id": "s", "result": "done"])
            try caller.expectNothingPendingBeforePing()
        }

        @Test("continues to a request without more: the caller gets the first response as the final one")
        func continuesWithoutMore() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try world.peer(daemon)
            _ = try component.register("S", actions: ["one"])
            let caller = try world.peer(daemon)
            try caller.request("S", "one", id: 1)
            let request = try component.incomingRequest()
            #expect(request["more"] == nil || request["more"] == false)
            try component.send(["id": request["id"]!, "result": "first", "continues": true])
            try component.send(["id": request["id"]!, "result": "second"])
            let reply = try caller.receive()
            #expect(reply == ["id": 1, "result": "first"], "\(reply.jsonText)")
            try caller.expectNothingPendingBeforePing()
        }

        @Test("An error after partials ends a more call")
        func errorAfterPartials() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try world.peer(daemon)
            _ = try component.register("S", actions: ["count"])
            let caller = try world.peer(daemon)
            try caller.request("S", "count", id: 1, more: true)
            let request = try component.incomingRequest()
            try component.send(["id": request["id"]!, "result": 1, "continues": true])
            try component.reply(to: request, error: "broken", message: "gave up")
            #expect(try caller.receive() == ["id": 1, "result": 1, "continues": true])
            #expect(try caller.receive() == ["id": 1, "error": ["code": "broken", "message": "gave up"]])
        }

        @Test("A result or error with a lone surrogate escape is answered invalid_result at once, schema or not, partial too")
        func loneSurrogateInAResult() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try world.peer(daemon)
            _ = try component.register("S", actions: ["plain", ["name": "typed", "result": ["type": "object"]], "count"])
            let caller = try world.peer(daemon)
            // Well within the calls' 60 s timeout: before the fix the response was dropped as malformed.
            let bound = Duration.seconds(10)
            func expectRefused(_ reply: JSONValue, action: String) {
                #expect(reply.errorCode == "invalid_result", "\(reply.jsonText)")
                #expect(reply["error"]?["data"] == ["target": "S", "action": .string(action), "delivered": true], "\(reply.jsonText)")
                #expect(
                    reply["error"]?["message"]?.stringValue?.hasPrefix(#"result: lone surrogate escape \ud800"#) == true,
                    "\(reply.jsonText)")
            }

            for action in ["plain", "typed"] {
                let id = try caller.request("S", action, timeoutMs: 60_000)
                let request = try component.incomingRequest()
                try component.sendLine(#"{"id":\#(request["id"]!.jsonText),"result":{"text":"a\ud800b"}}"#)
                expectRefused(try caller.response(to: id, within: bound), action: action)
                #expect(try component.event("mediator.invalid_result")["data"]?["id"] == request["id"])
            }

            let id = try caller.request("S", "count", timeoutMs: 60_000, more: true)
            let request = try component.incomingRequest()
            try component.send(["id": request["id"]!, "result": 1, "continues": true])
            #expect(try caller.receive(within: bound) == ["id": id, "result": 1, "continues": true])
            try component.sendLine(#"{"id":\#(request["id"]!.jsonText),"result":"\ud800","continues":true}"#)
            expectRefused(try caller.response(to: id, within: bound), action: "count")
            #expect(try component.event("mediator.invalid_result")["data"]?["id"] == request["id"])
            #expect(try component.event("mediator.cancel")["data"]?["id"] == request["id"])

            // An error that holds one is refused the same way.
            let errorID = try caller.request("S", "plain", timeoutMs: 60_000)
            let failing = try component.incomingRequest()
            try component.sendLine(#"{"id":\#(failing["id"]!.jsonText),"error":{"code":"x","message":"a\ud800b"}}"#)
            let refused = try caller.response(to: errorID, within: bound)
            #expect(refused.errorCode == "invalid_result", "\(refused.jsonText)")
            #expect(refused["error"]?["message"]?.stringValue?.hasPrefix(#"error: lone surrogate escape \ud800"#) == true)
            try caller.expectNothingPendingBeforePing()
        }

        @Test("Over the connection limit: the extra connection is refused; the others keep working")
        func connectionLimit() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--max-connections", "2"])
            // The readiness probe's connection may not be closed on the
            // daemon's side yet: retry until two connections both answer.
            var pair: (RawPeer, RawPeer)?
            try waitUntil("two connections that both answer ping") {
                guard let a = try? RawPeer(path: daemon.socketPath), let b = try? RawPeer(path: daemon.socketPath) else {
                    return false
                }
                if (try? a.call("mediator", "ping", within: .seconds(2)))?["result"] != nil,
                   (try? b.call("mediator", "ping", within: .seconds(2)))?["result"] != nil
                {
                    pair = (a, b)
                    return true
                }
                a.close()
                b.close()
                return false
            }
            let (first, second) = pair!
            defer { first.close(); second.close() }
            let refusal: String
            do {
                let third = try RawPeer(path: daemon.socketPath)
                defer { third.close() }
                _ = try? third.request("mediator", "ping", id: 1)
                let answer = try third.receive()
                refusal = answer.errorCode ?? answer.jsonText
            } catch is RawPeer.PeerClosed {
                refusal = "closed"
            } catch {
                refusal = "\(error)"
            }
            #expect(refusal == "overloaded" || refusal == "closed", "\(refusal)")
            #expect(try first.result("mediator", "ping") == [:])
        }

        @Test("SIGINT stops the daemon gracefully too")
        func sigint() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            daemon.process.signal(SIGINT)
            #expect(try daemon.process.waitForExit() == .exited(0))
        }
    }
}
