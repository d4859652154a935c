import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// Framing, credentials, events and load, over raw sockets.
    @Suite("Wire")
    struct Wire {
        @Test("The component sees the caller's real pid, uid, gid and hello name; a forged caller is ignored")
        func callerCredentials() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let peer = try world.peer(daemon)
            _ = try peer.result("mediator", "hello", params: ["protocol": 1, "name": "itest"])
            let forged: JSONValue = ["pid": 1, "uid": 4242, "gid": 4242, "name": "root"]
            let id = try peer.request("Notes", "echo", params: ["x": 1], extra: ["caller": forged])
            let reply = try peer.response(to: id)
            let result = try #require(reply["result"], "\(reply.jsonText)")
            #expect(result["x"] == 1)
            let caller = try #require(result["caller"])
            #expect(caller["pid"]?.intValue == Int64(getpid()))
            #expect(caller["uid"]?.intValue == Int64(getuid()))
            #expect(caller["gid"]?.intValue == Int64(getgid()))
            #expect(caller["name"] == "itest")

            // Without hello: no name.
            let anonymous = try world.peer(daemon)
            let plain = try anonymous.result("Notes", "echo")
            #expect(plain["caller"]?["pid"]?.intValue == Int64(getpid()))
            #expect(plain["caller"]?["name"] == nil)
        }

        @Test("Bad frames are answered and the connection keeps working; CRLF and empty lines are accepted")
        func badFrames() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--max-frame-bytes", "4096"])
            _ = try world.notes(daemon)
            let peer = try world.peer(daemon)

            let big = String(repeating: "x", count: 10_000)
            try peer.sendLine(#"{"id":7,"target":"Notes","action":"echo","params":{"pad":"\#(big)"}}"#)
            let tooLarge = try peer.receive()
            #expect(tooLarge.errorCode == "frame_too_large", "\(tooLarge.jsonText)")
            #expect(tooLarge["id"] == 7 || tooLarge["id"] == .null, "\(tooLarge.jsonText)")
            #expect(try peer.result("Notes", "echo", params: ["after": "big"])["after"] == "big")

            // A frame just under the limit is fine.
            let fits = String(repeating: "y", count: 3000)
            #expect(try peer.result("Notes", "echo", params: ["pad": .string(fits)])["pad"] == .string(fits))

            try peer.sendLine("this is not json")
            let notJSON = try peer.receive()
            #expect(notJSON == ["id": .null, "error": notJSON["error"]!])
            #expect(notJSON.errorCode == "bad_request")

            try peer.sendLine("[1, 2, 3]")
            #expect(try peer.receive().errorCode == "bad_request")

            try peer.sendLine(#"{"id": 42, "neither": "kind"}"#)
            let noKind = try peer.receive()
            #expect(noKind.errorCode == "bad_request")
            #expect(noKind["id"] == 42)

            try peer.sendLine(#"{"id": 43, "target": "bad name!", "action": "x"}"#)
            let badName = try peer.receive()
            #expect(badName.errorCode == "bad_request", "\(badName.jsonText)")
            #expect(badName["id"] == 43)

            try peer.write(Array("\r\n\n{\"id\":\"crlf\",\"target\":\"mediator\",\"action\":\"ping\"}\r\n".utf8))
            #expect(try peer.receive() == ["id": "crlf", "result": [:]])

            // A frame too large that arrives in pieces.
            try peer.write(Array(#"{"id":8,"target":"Notes","#.utf8))
            for _ in 0..<5 { try peer.write(Array(String(repeating: " ", count: 2000).utf8)) }
            try peer.write(Array(#""action":"echo"}"#.utf8) + [0x0A])
            #expect(try peer.receive().errorCode == "frame_too_large")
            #expect(try peer.result("Notes", "echo", params: ["still": "ok"])["still"] == "ok")
        }

        @Test("A duplicate id in flight is a bad_request with id null")
        func duplicateID() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try world.peer(daemon)
            _ = try component.register("Hang", actions: ["wait"])
            let caller = try world.peer(daemon)
            try caller.request("Hang", "wait", id: 1)
            _ = try component.incomingRequest()
            try caller.request("Hang", "wait", id: 1)
            let duplicate = try caller.receive()
            #expect(duplicate.errorCode == "bad_request", "\(duplicate.jsonText)")
            #expect(duplicate["id"] == .null)
        }

        @Test("20 clients × 500 pipelined calls: every reply matches its request")
        func pipelinedLoad() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let path = daemon.socketPath
            let perClient = 500
            let started = ContinuousClock.now
            let problems = try onThreads(20, within: .seconds(120)) { client -> [String] in
                let peer = try RawPeer.connect(path)
                defer { peer.close() }
                var batch: [UInt8] = []
                var expected: [JSONValue: Int] = [:]
                for seq in 0..<perClient {
                    // Half integer ids, half string ids.
                    let id: JSONValue = seq % 2 == 0 ? .int(Int64(client * 100_000 + seq)) : .string("c\(client)-\(seq)")
                    expected[id] = seq
                    let request: JSONValue = [
                        "id": id, "target": "Notes", "action": "echo",
                        "params": ["client": .int(Int64(client)), "seq": .int(Int64(seq)), "text": .string("m\(client).\(seq)")],
                    ]
                    batch += request.encoded + [0x0A]
                }
                try peer.write(batch, within: .seconds(60))
                var problems: [String] = []
                for _ in 0..<perClient {
                    let reply = try peer.receive(within: .seconds(60))
                    guard let id = reply["id"], let seq = expected.removeValue(forKey: id) else {
                        problems.append("unexpected or repeated reply \(reply.jsonText)")
                        continue
                    }
                    let result = reply["result"]
                    if result?["client"] != .int(Int64(client)) || result?["seq"] != .int(Int64(seq))
                        || result?["text"] != .string("m\(client).\(seq)")
                    {
                        problems.append("reply \(reply.jsonText) does not match request \(seq) of client \(client)")
                    }
                }
                if !expected.isEmpty { problems.append("client \(client): \(expected.count) requests unanswered") }
                return problems
            }
            let elapsed = ContinuousClock.now - started
            let all = problems.flatMap { $0 }
            #expect(all.isEmpty, "\(all.count) problems, first: \(all.prefix(5))")
            print("20 × \(perClient) pipelined calls through the Python component: \(elapsed)")
        }

        @Test("Events: subscribers get matching events once; registration events carry the component's pid")
        func events() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let watcher = try world.peer(daemon)
            #expect(try watcher.result("mediator", "subscribe", params: ["events": ["user.*", "user.login", "mediator.*"]]) == [:])
            let other = try world.peer(daemon)
            _ = try other.result("mediator", "subscribe", params: ["events": ["*"]])
            let quiet = try world.peer(daemon)
            _ = try quiet.result("mediator", "subscribe", params: ["events": ["billing.*"]])

            let publisher = try world.peer(daemon)
            let published = try publisher.result("mediator", "publish", params: ["event": "user.login", "data": ["user": "ann"]])
            #expect(published == ["delivered": 2])
            #expect(try watcher.event("user.login")["data"] == ["user": "ann"])
            #expect(try other.event("user.login")["data"] == ["user": "ann"])
            try watcher.expectNothingPendingBeforePing()  // once, though two patterns match
            try quiet.expectNothingPendingBeforePing()

            // A bare event from a peer is published too; mediator.* from a peer is not.
            try publisher.send(["event": "user.logout", "data": 1])
            #expect(try watcher.event("user.logout")["data"] == 1)
            let forbidden = try publisher.call("mediator", "publish", params: ["event": "mediator.registered"])
            #expect(forbidden.errorCode == "forbidden", "\(forbidden.jsonText)")

            let notes = try world.notes(daemon)
            let registered = try watcher.event("mediator.registered")
            #expect(registered["data"]?["target"] == "Notes")
            #expect(registered["data"]?["pid"]?.intValue == Int64(notes.pid))
            notes.signal(SIGKILL)
            let unregistered = try watcher.event("mediator.unregistered")
            #expect(unregistered["data"]?["target"] == "Notes")
            #expect(unregistered["data"]?["reason"] == "disconnected")
            #expect(unregistered["data"]?["instance"] == registered["data"]?["instance"])
        }
    }
}
