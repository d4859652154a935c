import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// The access policy and the per-uid quotas with real processes running
    /// as other uids (`setpriv --reuid/--regid`): the real `mediatorctl`, the
    /// Python example component and raw connections. Needs root, as CI has;
    /// skipped (and shown as skipped) otherwise.
    @Suite("Several users", .enabled(if: OtherUser.available, "needs root and util-linux setpriv"))
    struct MultiUser {
        /// The component owner: registers Svc (plain uid, no passwd entry).
        static let alice = OtherUser(uid: 4101, gid: 4101)
        /// A client, without supplementary groups.
        static let bob = OtherUser(uid: 4102, gid: 4102)
        /// The same uid with the supplementary group 4200 ("staff").
        static let bobStaff = OtherUser(uid: 4102, gid: 4102, groups: [4200])
        /// The same uid with the supplementary group 4201.
        static let bobDev = OtherUser(uid: 4102, gid: 4102, groups: [4201])
        /// Matched by name through NSS (`user: nobody`, `group: nogroup`).
        static let nobody = OtherUser.nobody

        /// Rules matching by uid, by gid (supplementary), by user and group
        /// name, and both at once.
        static let policy: JSONValue = [
            "description": "MultiUserTests",
            "rules": [
                ["match": ["uid": 4101],
                 "allow": ["register": ["Svc", "Alice.*"], "call": ["Svc/*"], "subscribe": ["svc.*"], "publish": ["svc.*"]]],
                ["match": ["uid": 4102], "allow": ["call": ["Svc/echo", "Svc/sleep"], "subscribe": ["user.*"]]],
                ["match": ["gid": 4200], "allow": ["call": ["Svc/list"], "publish": ["user.*"]]],
                ["match": ["uid": 4102, "gid": 4201], "allow": ["register": ["Bob.*"]]],
                ["match": ["user": "nobody"], "allow": ["call": ["Svc/get"], "monitor": true]],
                ["match": ["group": "nogroup"], "allow": ["register": ["Nobody.*"]]],
            ],
        ]

        /// The daemon's log lines that contain `text`.
        static func logLines(_ daemon: DaemonProcess, containing text: String) -> [String] {
            daemon.process.stderrLines.filter { $0.contains(text) }
        }

        /// A refused request: `forbidden`, and the message names who and what.
        static func expectForbidden(_ reply: JSONValue, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(reply.errorCode == "forbidden", "\(reply.jsonText)", sourceLocation: sourceLocation)
            #expect(reply["error"]?["message"]?.stringValue == message, "\(reply.jsonText)", sourceLocation: sourceLocation)
        }

        /// mediatorctl's refusal: status 1 and `mediatorctl: forbidden: MESSAGE`.
        static func expectForbidden(
            _ outcome: ChildProcess.Outcome, _ message: String, sourceLocation: SourceLocation = #_sourceLocation
        ) {
            #expect(outcome.status == 1, "\(outcome)", sourceLocation: sourceLocation)
            #expect(outcome.stderr == "mediatorctl: forbidden: \(message)\n", "\(outcome)", sourceLocation: sourceLocation)
        }

        @Test("register: granted by uid, by group name and by uid with a supplementary group; denied otherwise")
        func register() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(policy: Self.policy)

            // The real Python component, as alice.
            _ = try Self.alice.notes(world, daemon, target: "Svc")
            let listed = try #require(try daemon.listing("Svc")?["instances"]?.arrayValue?.first)
            #expect(listed["uid"] == 4101)
            let alicePeer = try Self.alice.connect(daemon)
            #expect(try alicePeer.register("Alice.extra", actions: ["x"])["target"] == "Alice.extra")
            Self.expectForbidden(
                try alicePeer.call("mediator", "register", params: ["target": "Other", "actions": ["x"]]),
                #"uid 4101 may not register "Other""#)

            // bob may register Bob.* only while he holds group 4201.
            let bob = try Self.bob.connect(daemon)
            Self.expectForbidden(
                try bob.call("mediator", "register", params: ["target": "Bob.one", "actions": ["x"]]),
                #"uid 4102 may not register "Bob.one""#)
            let bobDev = try Self.bobDev.connect(daemon)
            #expect(try bobDev.register("Bob.one", actions: ["x"])["target"] == "Bob.one")

            // The real component is refused too, and says so.
            let refused = try Self.bob.spawnNotes(world, daemon, target: "Bob.notes")
            let ended = try refused.waitForExit(within: .seconds(20))
            #expect(ended == .exited(1), "\(refused.logTail())")
            #expect(refused.stderr.contains(#"forbidden: uid 4102 may not register "Bob.notes""#), "\(refused.logTail())")

            // nobody and nogroup, resolved by name; the message names the user.
            let nobody = try Self.nobody.connect(daemon)
            #expect(try nobody.register("Nobody.box", actions: ["x"])["target"] == "Nobody.box")
            Self.expectForbidden(
                try nobody.call("mediator", "register", params: ["target": "Svc2", "actions": ["x"]]),
                #"uid 65534 (nobody) may not register "Svc2""#)

            // Each denial is logged with the peer's pid, uid and executable.
            let denials = Self.logLines(daemon, containing: "access denied")
            #expect(denials.contains { $0.contains(#"denied=register "Bob.notes""#) && $0.contains("uid=4102") && $0.contains("exe=/") })
            #expect(denials.contains { $0.contains(#"denied=register "Svc2""#) && $0.contains("uid=65534") && $0.contains("pid=") })
            #expect(try daemon.listing("Bob.notes") == nil)
        }

        @Test("call and open: granted and denied per uid and group; the component sees the caller's real uid, gid and groups")
        func callAndOpen() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(policy: Self.policy)
            _ = try Self.alice.notes(world, daemon, target: "Svc")

            // The caller member comes from the kernel: uid, gid, pid and no groups.
            let echo = try Self.bob.spawnCtl(world, daemon, "call", ["Svc", "echo", "x=1", "--json"], label: "bob-echo")
            #expect(try echo.waitForExit() == .exited(0), "\(echo.logTail())")
            let echoed = try JSONValue.parse(echo.stdout)
            #expect(echoed["x"] == 1)
            #expect(echoed["caller"]?["uid"] == 4102)
            #expect(echoed["caller"]?["gid"] == 4102)
            #expect(echoed["caller"]?["pid"]?.intValue == Int64(echo.pid))
            #expect(echoed["caller"]?["groups"] == nil, "setpriv --clear-groups: no supplementary group")

            Self.expectForbidden(try Self.bob.ctl(daemon, "call", ["Svc", "add", "text=hi"]), #"uid 4102 may not call "Svc/add""#)
            Self.expectForbidden(try Self.bob.ctl(daemon, "call", ["Svc", "list"]), #"uid 4102 may not call "Svc/list""#)
            // The daemon's own read-only actions stay open.
            #expect(try Self.bob.ctl(daemon, "ping").status == 0)

            // A supplementary group counts, and the component sees it.
            let staffList = try Self.bobStaff.ctl(daemon, "call", ["Svc", "list", "--json"])
            #expect(staffList.status == 0, "\(staffList)")
            #expect(try JSONValue.parse(staffList.stdout)["notes"] == [])
            let staffEcho = try Self.bobStaff.ctl(daemon, "call", ["Svc", "echo", "--json"])
            let staffCaller = try JSONValue.parse(staffEcho.stdout)["caller"]
            #expect(staffCaller?["uid"] == 4102 && staffCaller?["gid"] == 4102)
            #expect(staffCaller?["groups"] == [4200])

            // open is checked as the call it reaches.
            let opened = try Self.bob.ctl(daemon, "open", ["app://Svc/echo?a=1", "--json"])
            #expect(opened.status == 0, "\(opened)")
            let openedResult = try JSONValue.parse(opened.stdout)
            #expect(openedResult["a"] == "1" && openedResult["caller"]?["uid"] == 4102)
            Self.expectForbidden(try Self.bob.ctl(daemon, "open", ["app://Svc/add?text=x"]), #"uid 4102 may not call "Svc/add""#)

            // alice may call everything of Svc; nobody (by name) only get.
            let added = try Self.alice.ctl(daemon, "call", ["Svc", "add", "text=from alice", "--json"])
            #expect(added.status == 0, "\(added)")
            let fetched = try Self.nobody.ctl(daemon, "call", ["Svc", "get", "id=1", "--json"])
            #expect(fetched.status == 0, "\(fetched)")
            #expect(try JSONValue.parse(fetched.stdout)["text"] == "from alice")
            Self.expectForbidden(
                try Self.nobody.ctl(daemon, "call", ["Svc", "echo"]), #"uid 65534 (nobody) may not call "Svc/echo""#)
            Self.expectForbidden(
                try Self.nobody.ctl(daemon, "open", ["app://Svc/echo?a=1"]), #"uid 65534 (nobody) may not call "Svc/echo""#)

            // A raw peer: the denial carries the request's id.
            let raw = try Self.bob.connect(daemon)
            let id = try raw.request("Svc", "get", params: ["id": 1])
            let reply = try raw.response(to: id)
            Self.expectForbidden(reply, #"uid 4102 may not call "Svc/get""#)
            #expect(Self.logLines(daemon, containing: "access denied").contains {
                $0.contains(#"denied=call "Svc/add""#) && $0.contains("uid=4102") && $0.contains("exe=/")
            })
        }

        @Test("subscribe and publish: granted and denied, with mediatorctl listen/emit and raw peers")
        func subscribeAndPublish() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(policy: Self.policy)

            // Coverage: user.* covers user.* and user.login, not * or svc.*.
            let subscriber = try Self.bob.connect(daemon)
            #expect(try subscriber.result("mediator", "subscribe", params: ["events": ["user.*"]]) == [:])
            #expect(try subscriber.result("mediator", "subscribe", params: ["events": ["user.login"]]) == [:])
            Self.expectForbidden(
                try subscriber.call("mediator", "subscribe", params: ["events": ["*"]]), #"uid 4102 may not subscribe to "*""#)
            Self.expectForbidden(
                try subscriber.call("mediator", "subscribe", params: ["events": ["svc.*"]]),
                #"uid 4102 may not subscribe to "svc.*""#)
            Self.expectForbidden(try Self.bob.ctl(daemon, "listen", ["*"]), #"uid 4102 may not subscribe to "*""#)

            // Publishing user.* needs group 4200.
            let emitted = try Self.bobStaff.ctl(daemon, "emit", ["user.login", "who=ann", "--json"])
            #expect(emitted.status == 0, "\(emitted)")
            #expect(try JSONValue.parse(emitted.stdout) == ["delivered": 1])
            let event = try subscriber.event("user.login")
            #expect(event["data"] == ["who": "ann"])
            Self.expectForbidden(try Self.bob.ctl(daemon, "emit", ["user.login"]), #"uid 4102 may not publish "user.login""#)
            let alice = try Self.alice.connect(daemon)
            Self.expectForbidden(
                try alice.call("mediator", "publish", params: ["event": "user.login"]), #"uid 4101 may not publish "user.login""#)
            #expect(try alice.result("mediator", "publish", params: ["event": "svc.up"]) == ["delivered": 0])

            // A bare event without the right is dropped (and logged): the
            // next user.* event the subscriber gets is the one root sends after.
            try alice.send(["event": "user.sneaky", "data": 1])
            _ = try alice.result("mediator", "ping")
            let root = try world.peer(daemon)
            #expect(try root.result("mediator", "publish", params: ["event": "user.after"]) == ["delivered": 1])
            let next = try subscriber.receive { $0["event"] != nil }
            #expect(next["event"] == "user.after", "\(next.jsonText)")
            #expect(Self.logLines(daemon, containing: "access denied").contains {
                $0.contains(#"denied=publish "user.sneaky""#) && $0.contains("uid=4101")
            })

            // mediatorctl listen as bob gets what he may subscribe to.
            let listener = try Self.bob.spawnCtl(world, daemon, "listen", ["user.*"], label: "bob-listen")
            try waitUntil("bob's listen to print user.tick\(listener.logTail())") {
                if let ended = listener.termination { throw HarnessError("listen ended (\(ended))\(listener.logTail())") }
                _ = try root.result("mediator", "publish", params: ["event": "user.tick"])
                return listener.stdoutLines.contains { $0.contains("user.tick") }
            }
        }

        @Test("monitor: granted to the user nobody by name; denied to others, by mediatorctl and raw")
        func monitor() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(policy: Self.policy)
            _ = try Self.alice.notes(world, daemon, target: "Svc")

            Self.expectForbidden(try Self.bob.ctl(daemon, "monitor"), "uid 4102 may not monitor")
            let alice = try Self.alice.connect(daemon)
            Self.expectForbidden(try alice.call("mediator", "monitor"), "uid 4101 may not monitor")

            // nobody's monitor sees bob's calls, with bob's uid.
            let monitor = try Self.nobody.spawnCtl(world, daemon, "monitor", ["--target", "Svc"], label: "nobody-monitor")
            let bob = try Self.bob.connect(daemon)
            var record: JSONValue?
            try waitUntil("nobody's monitor to show a call of bob's\(monitor.logTail())") {
                if let ended = monitor.termination { throw HarnessError("monitor ended (\(ended))\(monitor.logTail())") }
                _ = try bob.result("Svc", "echo", params: ["n": 1])
                record = try monitor.stdoutLines.map { try JSONValue.parse($0) }.first { $0["type"] == "request" }
                return record != nil
            }
            #expect(record?["from"]?["uid"] == 4102)
            #expect(record?["to"]?["uid"] == 4101)
            #expect(record?["target"] == "Svc")
            #expect(Self.logLines(daemon, containing: "monitor attached").contains { $0.contains("uid=65534") })
        }

        @Test("The socket mode is the outer gate: 0660 keeps out a uid outside the socket's group")
        func socketModeGate() throws {
            let world = try World()
            defer { world.close() }
            try world.shareDirectory()
            let daemon = try world.daemon(["--socket-mode", "0660"])
            var info = stat()
            #expect(stat(daemon.socketPath, &info) == 0 && info.st_mode & 0o777 == 0o660)

            let outside = try Self.bob.ctl(daemon, "ping")
            #expect(outside.status == 69, "\(outside)")
            #expect(outside.stderr.lowercased().contains("permission denied"), "\(outside)")
            // The socket has the daemon's group (root's): holding it lets bob in.
            let member = OtherUser(uid: 4102, gid: 4102, groups: [UInt32(info.st_gid)])
            #expect(try member.ctl(daemon, "ping").status == 0)
        }

        // MARK: - Quotas

        /// Everything allowed to everyone, so only the quotas refuse.
        static let openPolicy: JSONValue = [
            "rules": [["match": [:], "allow": ["register": ["*"], "call": ["*/*"], "subscribe": ["*"], "publish": ["*"]]]],
        ]

        /// An `overloaded` reply naming the quota and its limit.
        /// `delivered` is the daemon's `data.delivered` on an answer to a
        /// request (nil: none, as on a refused connection's only line).
        static func expectQuota(
            _ reply: JSONValue, _ quota: String, _ limit: Int, uid: UInt32, delivered: Bool? = false,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            var data: [String: JSONValue] = ["quota": .string(quota), "limit": .int(Int64(limit))]
            if let delivered { data["delivered"] = .bool(delivered) }
            #expect(reply.errorCode == "overloaded", "\(reply.jsonText)", sourceLocation: sourceLocation)
            #expect(
                reply["error"]?["message"]?.stringValue == "uid \(uid) reached its quota \(quota) = \(limit)",
                "\(reply.jsonText)", sourceLocation: sourceLocation)
            #expect(
                reply["error"]?["data"] == .object(data), "\(reply.jsonText)",
                sourceLocation: sourceLocation)
        }

        /// The daemon logged the quota with the culprit's uid, pid and executable.
        static func expectQuotaLogged(
            _ daemon: DaemonProcess, _ quota: String, uid: UInt32, sourceLocation: SourceLocation = #_sourceLocation
        ) {
            let lines = logLines(daemon, containing: "quota reached").filter { $0.contains("quota=\(quota)") }
            #expect(
                lines.contains { $0.contains("uid=\(uid)") && $0.contains("pid=") && $0.contains("exe=/") },
                "no log line names uid \(uid), its pid and executable for \(quota):\n\(lines.joined(separator: "\n"))",
                sourceLocation: sourceLocation)
        }

        @Test("max_connections_per_uid: the uid's next connection gets overloaded and is closed; another uid connects")
        func connectionQuota() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(policy: Self.openPolicy, ["--max-connections-per-uid", "3"])

            let handed = try Self.bob.connections(daemon, count: 5)
            var served: [RawPeer] = []
            var refused: [JSONValue] = []
            for peer in handed.peers {
                _ = try? peer.request("mediator", "ping")
                let first = try peer.receive()
                if first["result"] != nil {
                    served.append(peer)
                } else {
                    refused.append(first)
                    // Then the end of the stream (or ECONNRESET, as our ping went unread).
                    #expect(throws: (any Error).self) { _ = try peer.receive() }
                }
            }
            #expect(served.count == 3)
            #expect(refused.count == 2)
            for reply in refused {
                #expect(reply["id"] == .null)
                Self.expectQuota(reply, "max_connections_per_uid", 3, uid: 4102, delivered: nil)
            }
            // Meanwhile another uid, and root, are served.
            _ = try Self.alice.connect(daemon)
            _ = try world.peer(daemon).result("mediator", "ping")
            Self.expectQuotaLogged(daemon, "max_connections_per_uid", uid: 4102)
            handed.release()

            // One closed connection makes room for one more.
            served[0].close()
            try waitUntil("bob to be admitted again") { (try? Self.bob.connect(daemon)) != nil }
        }

        @Test("max_calls_in_flight_per_uid: counted over the uid's connections; another uid is served meanwhile")
        func callQuota() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(policy: Self.openPolicy, ["--max-calls-in-flight-per-uid", "2"])
            _ = try world.notes(daemon, target: "Svc")
            let first = try Self.bob.connect(daemon)
            let second = try Self.bob.connect(daemon)

            // Each sleep is in flight once a ping after it on the same
            // connection is answered (the daemon reads a connection in order).
            let sleeping1 = try first.request("Svc", "sleep", params: ["ms": 60000], timeoutMs: 60000)
            _ = try first.result("mediator", "ping")
            let sleeping2 = try second.request("Svc", "sleep", params: ["ms": 60000], timeoutMs: 60000)
            _ = try second.result("mediator", "ping")
            Self.expectQuota(try second.call("Svc", "echo"), "max_calls_in_flight_per_uid", 2, uid: 4102)
            Self.expectQuota(try first.call("Svc", "echo"), "max_calls_in_flight_per_uid", 2, uid: 4102)
            Self.expectQuotaLogged(daemon, "max_calls_in_flight_per_uid", uid: 4102)

            // alice is not bob: served at once.
            let alice = try Self.alice.connect(daemon)
            #expect(try alice.result("Svc", "echo", params: ["n": 7])["n"] == 7)

            // Cancelling one frees its place.
            _ = try first.result("mediator", "cancel", params: ["id": sleeping1])
            #expect(try first.response(to: sleeping1).errorCode == "cancelled")
            #expect(try first.result("Svc", "echo", params: ["n": 8])["n"] == 8)
            _ = try second.result("mediator", "cancel", params: ["id": sleeping2])
            #expect(try second.response(to: sleeping2).errorCode == "cancelled")
        }

        @Test("max_subscriptions_per_uid and max_registrations_per_uid: refused with the quota named; other uids unaffected")
        func subscriptionAndRegistrationQuotas() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(
                policy: Self.openPolicy, ["--max-subscriptions-per-uid", "2", "--max-registrations-per-uid", "1"])

            let bob1 = try Self.bob.connect(daemon)
            let bob2 = try Self.bob.connect(daemon)
            #expect(try bob1.result("mediator", "subscribe", params: ["events": ["a.*", "b.*"]]) == [:])
            Self.expectQuota(
                try bob2.call("mediator", "subscribe", params: ["events": ["c.*"]]), "max_subscriptions_per_uid", 2, uid: 4102)
            let alice = try Self.alice.connect(daemon)
            #expect(try alice.result("mediator", "subscribe", params: ["events": ["a.*", "b.*"]]) == [:])
            _ = try bob1.result("mediator", "unsubscribe", params: ["events": ["a.*"]])
            #expect(try bob2.result("mediator", "subscribe", params: ["events": ["c.*"]]) == [:])
            Self.expectQuotaLogged(daemon, "max_subscriptions_per_uid", uid: 4102)

            // Registrations: the real Python component as alice takes her one.
            _ = try Self.alice.notes(world, daemon, target: "Q1")
            Self.expectQuota(
                try alice.call("mediator", "register", params: ["target": "Q2", "actions": ["x"]]),
                "max_registrations_per_uid", 1, uid: 4101)
            let refused = try Self.alice.spawnNotes(world, daemon, target: "Q3")
            #expect(try refused.waitForExit(within: .seconds(20)) == .exited(1), "\(refused.logTail())")
            #expect(refused.stderr.contains("overloaded: uid 4101 reached its quota max_registrations_per_uid = 1"), "\(refused.logTail())")
            #expect(try bob1.register("Q2", actions: ["x"])["target"] == "Q2")
            Self.expectQuotaLogged(daemon, "max_registrations_per_uid", uid: 4101)
        }
    }
}
