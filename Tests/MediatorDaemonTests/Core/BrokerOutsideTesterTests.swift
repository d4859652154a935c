import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// The defects an outside tester found in a release mediatord (issue 10),
/// each shown on the broker alone: every test here failed before its fix.
@Suite("Broker: defects found by an outside tester")
struct BrokerOutsideTesterTests {
    /// `app://mediator/open?url=<that, percent-encoded>` nested `depth` times around `innermost`.
    static func nestedOpenURL(depth: Int, innermost: String = "app://mediator/ping") -> String {
        var url = innermost
        for _ in 0..<depth {
            url = "app://mediator/open?url=" + percentEncoded(url)
        }
        return url
    }

    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
            }
        }
        return out
    }

    // MARK: 1. A nested `open` recursed until the stack overflowed

    @Test(arguments: [1, 2, 40])
    func anOpenCannotReachOpen(depth: Int) {
        let d = BrokerDriver()
        d.connect(1)
        let answer = d.daemon("open", #"{"url":"\#(Self.nestedOpenURL(depth: depth))"}"#, from: 1)
        #expect(errorCode(answer) == "forbidden", "depth \(depth): \(String(describing: answer))")
        // A URL to the daemon's other actions still works, and so does the connection.
        #expect(d.daemon("open", #"{"url":"app://mediator/ping"}"#, from: 1) == #"{"id":"d","result":{}}"#.json)
    }

    @Test func aFrameOfThousandsOfNestedOpensIsAnsweredNotRecursed() {
        let d = BrokerDriver()
        d.connect(1)
        // The tester's frame: about 240 KB. Percent-encoding triples each
        // level, so the depth comes from nesting the request itself instead.
        var url = "app://mediator/ping"
        var depth = 0
        while url.utf8.count < 200_000 {
            url = "app://mediator/open?url=" + url.replacingOccurrences(of: "%", with: "%25")
                .replacingOccurrences(of: "?", with: "%3F").replacingOccurrences(of: "&", with: "%26")
                .replacingOccurrences(of: "=", with: "%3D")
            depth += 1
            if depth > 20_000 { break }
        }
        let answer = d.daemon("open", #"{"url":"\#(url)"}"#, from: 1)
        #expect(["forbidden", "bad_request"].contains(errorCode(answer)), "\(String(describing: answer?["error"]))")
        #expect(d.daemon("ping", from: 1) == #"{"id":"d","result":{}}"#.json)
    }

    // MARK: 2. One connection joined its own pool 30,000 times

    @Test func aConnectionServesOneInstanceOfATarget() {
        let d = BrokerDriver()
        d.connect(1)
        d.register("P", mode: "pool", from: 1)
        let again = d.daemon(
            "register", #"{"target":"P","actions":["a"],"mode":"pool"}"#, from: 1)
        #expect(errorCode(again) == "already_registered")
        #expect(again?["error"]?["message"] == "this connection already serves an instance of \"P\"")
        #expect(d.broker.registry.target("P")?.instances.count == 1)
        // Another connection joins as before.
        d.connect(2)
        d.register("P", mode: "pool", from: 2)
        #expect(d.broker.registry.target("P")?.instances.count == 2)
    }

    @Test func poolInstancesCountAgainstTheRegistrationQuota() {
        let d = BrokerDriver { $0.maxRegistrationsPerUID = 2 }
        let uid = PeerCredentials(pid: 77, uid: 4242, gid: 4242)
        for connection in 1...3 { d.connect(connection, credentials: uid) }
        d.register("P", mode: "pool", from: 1)
        d.register("P", mode: "pool", from: 2)
        let third = d.daemon("register", #"{"target":"P","actions":["a"],"mode":"pool"}"#, from: 3)
        #expect(errorCode(third) == "overloaded")
        #expect(third?["error"]?["data"]?["quota"] == "max_registrations_per_uid")
    }

    // MARK: 5. Each call in flight kept its whole inbound frame

    @Test func aPendingCallKeepsItsIDNotTheFrame() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("T", from: 2)
        let big = String(repeating: "x", count: 1 << 20)
        d.send(#"{"id":"call-1","target":"T","action":"a","params":{"blob":"\#(big)"}}"#, from: 1)
        let call = d.broker.inFlight.all.first
        #expect(call?.callerIDBytes.readableBytes == 8)
        #expect((call?.callerIDBytes.storageCapacity ?? .max) < 1024, "the id has storage of its own")
        #expect(d.broker.inFlight.bytesHeld(of: 1) == 8)
    }

    @Test func heldCallsKeepTheirParamsInStorageOfTheirOwnAndCountAgainstTheBytesQuota() {
        let d = Self.activationDriver { $0.maxPendingBytesPerUID = 300_000 }
        let uid = PeerCredentials(pid: 77, uid: 4242, gid: 4242)
        d.connect(1, credentials: uid)
        let params = #"{"blob":"\#(String(repeating: "y", count: 100_000))"}"#
        for n in 1...2 { d.send(#"{"id":\#(n),"target":"Notes","action":"add","params":\#(params),"junk":"\#(String(repeating: "z", count: 500_000))"}"#, from: 1) }
        #expect(d.take(1).isEmpty, "both held")
        let held = d.broker.activation.components["Notes"]?.held ?? []
        #expect(held.count == 2)
        #expect(held.allSatisfy { ($0.request.params?.storageCapacity ?? .max) < 200_000 }, "not the 600 KB frame")
        // A third would pass 300,000 bytes held for the uid.
        d.send(#"{"id":3,"target":"Notes","action":"add","params":\#(params)}"#, from: 1)
        let refused = d.takeOne(1)
        #expect(errorCode(refused) == "overloaded")
        #expect(refused?["error"]?["data"]?["quota"] == "max_pending_bytes_per_uid")
    }

    // MARK: 6. Oneway calls held for activation were unbounded

    @Test func heldOnewayCallsCountAgainstTheCallsInFlightLimit() {
        let d = Self.activationDriver { $0.maxCallsInFlightPerConnection = 3 }
        d.connect(1)
        for n in 1...10 { d.send(#"{"target":"Notes","action":"add","params":{"n":\#(n)}}"#, from: 1) }
        #expect(d.broker.activation.components["Notes"]?.held.count == 3)
        #expect(d.take(1).isEmpty, "oneway: never an answer, not even a refusal")
        // A call with an id is refused by the same count.
        d.send(#"{"id":1,"target":"Notes","action":"add"}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "overloaded")
    }

    // MARK: 7. `notFound` called directly

    static func fallbackDriver() -> BrokerDriver {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("Svc", actions: #"["add",{"name":"reboot","url":false},"notFound"]"#, from: 2)
        return d
    }

    @Test(arguments: [
        (#"app://Svc/notFound?action=nativeReboot"#, "forbidden"),
        (#"app://Svc/notFound?action=..%2F..%2Fx%3B%20rm%20-rf"#, "invalid_params"),
        (#"app://Svc/notFound?action=reboot"#, "invalid_params"),
        (#"app://Svc/notFound"#, "invalid_params"),
        (#"app://Svc/notFound?action=x&params=1"#, "invalid_params"),
    ])
    func aURLToNotFoundIsCheckedAsTheActionItCarries(url: String, code: String) {
        let d = Self.fallbackDriver()
        let answer = d.daemon("open", #"{"url":"\#(url)"}"#, from: 1)
        #expect(errorCode(answer) == code, "\(url): \(String(describing: answer))")
        #expect(d.take(2).isEmpty, "the component never sees it")
    }

    @Test(arguments: [
        #"{"action":"../../x; rm -rf"}"#, #"{"action":""}"#, #"{"action":7}"#, #"{}"#, #"{"action":"add"}"#,
        #"{"action":"notFound"}"#, #"{"action":"x","params":[1]}"#,
    ])
    func aDirectNotFoundCallMustLookLikeOneTheDaemonMakes(params: String) {
        let d = Self.fallbackDriver()
        d.send(#"{"id":1,"target":"Svc","action":"notFound","params":\#(params)}"#, from: 1)
        #expect(errorCode(d.takeOne(1)) == "invalid_params", "\(params)")
        #expect(d.take(2).isEmpty)
    }

    @Test func aWellFormedDirectNotFoundCallIsForwarded() {
        let d = Self.fallbackDriver()
        d.send(#"{"id":1,"target":"Svc","action":"notFound","params":{"action":"other","params":{"k":"v"}}}"#, from: 1)
        #expect(d.takeJSON(2).map { $0["action"] } == ["notFound"])
        // And a URL to an undeclared action reaches the fallback as before.
        d.send(#"{"id":2,"target":"mediator","action":"open","params":{"url":"app://Svc/other?k=v"}}"#, from: 1)
        #expect(d.takeJSON(2).map { $0["params"] } == [#"{"action":"other","params":{"k":"v"}}"#.json])
    }

    // MARK: 9. A large `list` disconnected the one who asked

    @Test func aRegistrationIsBoundedInBytesAndSoIsAUidsTotal() {
        let d = BrokerDriver {
            $0.maxRegistrationBytes = 2_000
            $0.maxRegisteredBytesPerUID = 5_000
        }
        let uid = PeerCredentials(pid: 77, uid: 4242, gid: 4242)
        d.connect(1, credentials: uid)
        let names = (0..<200).map { #""action_\#($0)""# }.joined(separator: ",")
        let tooBig = d.daemon("register", #"{"target":"Big","actions":[\#(names)]}"#, from: 1)
        #expect(errorCode(tooBig) == "bad_request")
        #expect(tooBig?["error"]?["data"]?["limit"] == "max_registration_bytes")
        let some = (0..<100).map { #""a\#($0)""# }.joined(separator: ",")
        var refused: JSONValue?
        for n in 0..<10 {
            let answer = d.daemon("register", #"{"target":"T\#(n)","actions":[\#(some)]}"#, from: 1)
            if errorCode(answer) != nil {
                refused = answer
                break
            }
        }
        #expect(refused?["error"]?["data"]?["quota"] == "max_registered_bytes_per_uid")
    }

    @Test func listAnswersInPagesThatFitTheOutboundLimit() {
        let d = BrokerDriver { $0.maxOutboundBytes = 40_000 }
        d.connect(1)
        let actions = "[" + (0..<40).map { #""action_number_\#($0)""# }.joined(separator: ",") + "]"
        for n in 0..<60 {
            d.connect(100 + n)
            d.register("Target\(1000 + n)", actions: actions, from: 100 + n)
        }
        var seen: [String] = []
        var after: String?
        var pages = 0
        repeat {
            let params = after.map { #"{"after":"\#($0)"}"# } ?? "{}"
            let line = { d.send(#"{"id":"d","target":"mediator","action":"list","params":\#(params)}"#, from: 1) }
            line()
            let raw = d.take(1)
            #expect(raw.count == 1)
            #expect((raw.first?.utf8.count ?? .max) <= 40_000 / 4 + 2_000, "a page fits a quarter of the outbound limit")
            guard let page = raw.first.flatMap({ try? JSONParser.parse($0) })?["result"] else { break }
            seen += page["targets"]?.arrayValue?.compactMap { $0["target"]?.stringValue } ?? []
            after = page["next"]?.stringValue
            pages += 1
        } while after != nil && pages < 100
        #expect(pages > 1)
        #expect(seen == (0..<60).map { "Target\(1000 + $0)" }, "every target once, in order")
        // `limit` pages by count.
        let two = d.daemon("list", #"{"limit":2}"#, from: 1)
        #expect(two?["result"]?["targets"]?.arrayValue?.count == 2)
        #expect(two?["result"]?["next"] == "Target1001")
    }

    // MARK: 10. Held calls escaped the duplicate-id check and `cancel`

    @Test func aHeldCallsIDIsInFlight() {
        let d = Self.activationDriver()
        d.connect(1)
        d.send(#"{"id":5,"target":"Notes","action":"add"}"#, from: 1)
        d.send(#"{"id":5,"target":"Notes","action":"add"}"#, from: 1)
        let duplicate = d.takeOne(1)
        #expect(duplicate?["id"] == .null)
        #expect(errorCode(duplicate) == "bad_request")
        #expect(d.broker.activation.components["Notes"]?.held.count == 1)
        Self.registerNotes(d, as: 7)
        #expect(d.takeJSON(7).filter { $0["action"] == "add" }.count == 1, "one call forwarded, not two")
    }

    @Test func cancellingAHeldCallAnswersItCancelled() {
        let d = Self.activationDriver()
        d.connect(1)
        d.send(#"{"id":5,"target":"Notes","action":"add"}"#, from: 1)
        d.send(#"{"id":6,"target":"Notes","action":"add"}"#, from: 1)
        d.send(#"{"id":"c","target":"mediator","action":"cancel","params":{"id":5}}"#, from: 1)
        let lines = d.takeJSON(1)
        #expect(lines.contains(#"{"id":"c","result":{}}"#.json))
        #expect(lines.contains { $0["id"] == 5 && errorCode($0) == "cancelled" })
        #expect(d.broker.callsInFlight(of: 1) == 1)
        Self.registerNotes(d, as: 7)
        #expect(d.takeJSON(7).filter { $0["action"] == "add" }.count == 1, "only the call not cancelled goes out")
        // The id is free again.
        d.send(#"{"id":5,"target":"Notes","action":"add"}"#, from: 1)
        #expect(d.broker.inFlight.count == 2)
    }

    @Test func aStartWaitingForItsComponentObeysTheSameRules() {
        let d = Self.activationDriver()
        d.connect(1, credentials: PeerCredentials(pid: 1, uid: 0, gid: 0))
        d.send(#"{"id":"s","target":"mediator","action":"start","params":{"target":"Notes"}}"#, from: 1)
        d.send(#"{"id":"s","target":"mediator","action":"ping"}"#, from: 1)
        #expect(d.takeJSON(1).map { $0["id"] } == [.null], "the duplicate id is refused")
        d.send(#"{"id":"c","target":"mediator","action":"cancel","params":{"id":"s"}}"#, from: 1)
        let lines = d.takeJSON(1)
        #expect(lines.contains { $0["id"] == "s" && errorCode($0) == "cancelled" })
        Self.registerNotes(d, as: 7)
        #expect(!d.take(1).contains { $0.contains(#""running""#) }, "the cancelled start is not answered again")
    }

    // MARK: Helpers

    static func activationDriver(_ configure: (inout DaemonConfiguration) -> Void = { _ in }) -> BrokerDriver {
        let d = BrokerDriver(configure)
        d.apply(d.broker.loadManifests([BrokerActivationTests.manifest()], now: d.now))
        return d
    }

    /// The started process registers Notes from `connection` (pid 4100+connection).
    static func registerNotes(_ d: BrokerDriver, as connection: ConnectionID) {
        if let spawn = d.spawns.first {
            d.apply(d.broker.processStarted(spawnID: spawn.spawnID, pid: 4100 + Int32(connection), now: d.now))
        }
        d.connect(connection)
        d.send(
            #"{"id":"reg","target":"mediator","action":"register","params":{"target":"Notes","actions":["add","list"]}}"#,
            from: connection)
    }
}
