import Foundation
import MediatorProtocol
import Testing

@testable import MediatorClient

@Suite("MediatorClient against a fake daemon")
struct ClientTests {
    @Test func helloCarriesNameAndGivesConnectionID() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }

        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path, name: "tester") }
        let hello = try await fake.received.first("hello") { $0.action == "hello" }
        #expect(hello.target == "mediator")
        #expect(hello.message["params"] == ["protocol": 1, "name": "tester"])
        #expect(client.connectionID == hello.peer.number)
        try await withTimeout { try await client.ping() }

        let anonymous = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let hellos = try await fake.received.wait(for: 2, "second hello") { $0.action == "hello" }
        #expect(hellos[1].message["params"] == ["protocol": 1])
        await client.close()
        await anonymous.close()
    }

    @Test func unreachableSocket() async throws {
        let path = temporarySocketPath()
        let error = await mediatorError { try await MediatorClient.connect(socketPath: path) }
        #expect(error?.code == .unreachable)
        #expect(error?.message.hasPrefix("cannot connect to \(path): ") == true)
    }

    @Test func helloRefusedIsThrown() async throws {
        let fake = try await FakeDaemon.start { _, peer, message in
            guard let id = message["id"] else { return }
            peer.send(["id": id, "error": ["code": "unsupported_protocol", "message": "no"]])
        }
        defer { Task { await fake.shutdown() } }
        let error = await mediatorError { try await MediatorClient.connect(socketPath: fake.path) }
        #expect(error?.code == .unsupportedProtocol)
    }

    @Test func responsesOutOfOrderAreMatchedByID() async throws {
        let count = 50
        // Holds every Echo/hold request until `count` arrived, then answers them in reverse.
        let fake = try await FakeDaemon.start { core, peer, message in
            if message["action"] == "hold" {
                let all: [Received]? = core.held.withLockedValue { held in
                    held.append(Received(peer: peer, message: message))
                    return held.count == count ? held : nil
                }
                for request in (all ?? []).reversed() {
                    if let id = request.message["id"] {
                        request.peer.send(["id": id, "result": request.message["params"] ?? .null])
                    }
                }
                return
            }
            FakeDaemon.standard(core, peer, message)
        }
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }

        let results = try await withTimeout(10, "held calls") {
            try await withThrowingTaskGroup(of: (Int, JSONValue).self) { group in
                for index in 0..<count {
                    group.addTask { (index, try await client.call(target: "Echo", action: "hold", params: ["i": .int(Int64(index))])) }
                }
                var results: [Int: JSONValue] = [:]
                for try await (index, value) in group { results[index] = value }
                return results
            }
        }
        #expect(results.count == count)
        for (index, value) in results { #expect(value == ["i": .int(Int64(index))]) }
        let ids = fake.received.items.filter { $0.action == "hold" }.compactMap { $0.id?.intValue }
        #expect(Set(ids).count == count)
        await client.close()
    }

    /// Tasks that prefer `client.executor` run on the connection's event
    /// loop and their calls still pipeline and match by id.
    @Test func callsFromTheClientsExecutor() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let results = try await withTimeout(30, "calls on the client's executor") {
            try await withThrowingTaskGroup(of: (onLoop: Bool, matched: Bool).self) { group in
                for index in 0..<500 {
                    group.addTask(executorPreference: client.executor) {
                        let value = try await client.call(target: "Echo", action: "echo", params: ["n": .int(Int64(index))])
                        let onLoop = client.connection.loop.inEventLoop
                        return (onLoop, value["n"]?.intValue == Int64(index))
                    }
                }
                var results: [(onLoop: Bool, matched: Bool)] = []
                for try await result in group { results.append(result) }
                return results
            }
        }
        #expect(results.count == 500)
        #expect(results.allSatisfy { $0.onLoop && $0.matched })
        #expect(client.connection.pending.count == 0)
        await client.close()
    }

    @Test func thousandsOfPipelinedCalls() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let count = 20_000
        let started = ContinuousClock.now
        let matched = try await withTimeout(30, "pipelined calls") {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<count {
                    group.addTask {
                        let value = try await client.call(target: "Echo", action: "echo", params: ["n": .int(Int64(index))])
                        return value["n"]?.intValue == Int64(index)
                    }
                }
                var matched = 0
                for try await ok in group where ok { matched += 1 }
                return matched
            }
        }
        let elapsed = ContinuousClock.now - started
        #expect(matched == count)
        #expect(client.connection.pending.count == 0)
        // Generous: a debug build does this in well under a second.
        #expect(elapsed < .seconds(20))
        await client.close()
    }

    @Test func pendingCallsFailWhenTheDaemonCloses() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let count = 20
        let calls = Task {
            await withTaskGroup(of: MediatorError?.self) { group in
                for _ in 0..<count {
                    group.addTask { await mediatorError { try await client.call(target: "Echo", action: "hang") } }
                }
                var errors: [MediatorError?] = []
                for await error in group { errors.append(error) }
                return errors
            }
        }
        let hangs = try await fake.received.wait(for: count, "hanging calls") { $0.action == "hang" }
        await hangs[0].peer.close()
        let errors = try await withTimeout(5, "calls to fail") { await calls.value }
        #expect(errors.count == count)
        #expect(errors.allSatisfy { $0?.code == .disconnected })
        // Later calls fail at once too.
        let later = await mediatorError { try await client.ping() }
        #expect(later?.code == .disconnected)
        let oneway = await mediatorError { try await client.send(target: "Echo", action: "echo") }
        #expect(oneway?.code == .disconnected)
    }

    @Test func pendingCallsFailWhenTheClientCloses() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let call = Task { await mediatorError { try await client.call(target: "Echo", action: "hang") } }
        let stream = client.stream(target: "Echo", action: "hang")
        _ = try await fake.received.wait(for: 2, "hanging calls") { $0.action == "hang" }
        try await withTimeout { await client.close() }
        let error = try await withTimeout { await call.value }
        #expect(error?.code == .disconnected)
        let streamError = try await withTimeout {
            do {
                for try await _ in stream {}
                return nil as MediatorError?
            } catch let error as MediatorError {
                return error
            }
        }
        #expect(streamError?.code == .disconnected)
    }

    @Test func cancellingTheTaskSendsMediatorCancel() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let call = Task { await mediatorError { try await client.call(target: "Echo", action: "hang", timeout: .seconds(10)) } }
        let hang = try await fake.received.first("hanging call") { $0.action == "hang" }
        #expect(hang.message["timeout_ms"] == 10_000)
        let id = try #require(hang.id)
        call.cancel()
        let error = try await withTimeout { await call.value }
        #expect(error?.code == .cancelled)
        let cancel = try await fake.received.first("mediator/cancel") { $0.action == "cancel" }
        #expect(cancel.target == "mediator")
        #expect(cancel.message["params"] == ["id": id])
        #expect(cancel.id == nil, "the cancel request is oneway")
        #expect(client.connection.pending.count == 0)

        // A task cancelled before the call sends nothing at all.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await mediatorError { try await client.call(target: "Echo", action: "echo", params: ["early": true]) }
        }
        #expect(try await withTimeout { await early.value }?.code == .cancelled)
        try await withTimeout { try await client.ping() }
        #expect(!fake.received.items.contains { $0.message["params"]?["early"] != nil })
        await client.close()
    }

    @Test func streamYieldsContinuesThenTheFinalResult() async throws {
        let fake = try await FakeDaemon.start { core, peer, message in
            guard let id = message["id"], message["target"] == "Counter" else {
                FakeDaemon.standard(core, peer, message)
                return
            }
            let count = message["params"]?["n"]?.intValue ?? 0
            for index in 0..<count {
                peer.send(["id": id, "result": ["i": .int(index)], "continues": true])
            }
            if message["action"] == "fail" {
                peer.send(["id": id, "error": ["code": "broken", "message": "it broke", "data": [1, 2]]])
            } else {
                peer.send(["id": id, "result": ["done": true]])
            }
        }
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }

        let values = try await withTimeout {
            var values: [JSONValue] = []
            for try await value in client.stream(target: "Counter", action: "count", params: ["n": 3], timeout: .seconds(2)) {
                values.append(value)
            }
            return values
        }
        #expect(values == [["i": 0], ["i": 1], ["i": 2], ["done": true]])
        let request = try await fake.received.first("count request") { $0.action == "count" }
        #expect(request.message["more"] == true)
        #expect(request.message["timeout_ms"] == 2000)

        let (partials, error) = try await withTimeout {
            var partials: [JSONValue] = []
            do {
                for try await value in client.stream(target: "Counter", action: "fail", params: ["n": 1]) { partials.append(value) }
                return (partials, nil as MediatorError?)
            } catch let error as MediatorError {
                return (partials, error)
            }
        }
        #expect(partials == [["i": 0]])
        #expect(error == MediatorError(ErrorCode("broken"), "it broke", data: [1, 2]))

        // A plain call to a streaming target takes the first response as final.
        let first = try await withTimeout { try await client.call(target: "Counter", action: "count", params: ["n": 2]) }
        #expect(first == ["i": 0])
        #expect(client.connection.pending.count == 0)
        await client.close()
    }

    @Test func abandonedStreamSendsCancel() async throws {
        let fake = try await FakeDaemon.start { core, peer, message in
            if message["action"] == "ticks", let id = message["id"] {
                peer.send(["id": id, "result": 1, "continues": true])
                return
            }
            FakeDaemon.standard(core, peer, message)
        }
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let first = try await withTimeout {
            for try await value in client.stream(target: "Ticker", action: "ticks") { return value }
            return nil
        }
        #expect(first == 1)
        let request = try await fake.received.first("ticks") { $0.action == "ticks" }
        let cancel = try await fake.received.first("cancel") { $0.action == "cancel" }
        #expect(cancel.message["params"]?["id"] == request.id)
        await client.close()
    }

    @Test func localBoundGuardsASilentDaemon() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let started = ContinuousClock.now
        let error = try await withTimeout(5) {
            await mediatorError { try await client.call(target: "Echo", action: "hang", timeout: .milliseconds(20)) }
        }
        #expect(error?.code == .timeout)
        #expect(ContinuousClock.now - started >= .seconds(1))
        _ = try await fake.received.first("cancel after local timeout") { $0.action == "cancel" }
        await client.close()
    }

    @Test func onewaySendHasNoID() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        try await client.send(target: "Echo", action: "echo", params: ["note": "hi"])
        let note = try await fake.received.first("oneway") { $0.message["params"]?["note"] != nil }
        #expect(note.id == nil)
        #expect(note.message["target"] == "Echo")
        await client.close()
    }

    @Test func daemonActionsSendTheRightParams() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        #expect(try await client.publish("user.login", data: ["who": "ann"]) == 3)
        #expect(try await client.list() == ["targets": []])
        _ = await mediatorError { try await client.describe("Detail") }
        _ = await mediatorError { try await client.open("app://Detail/show?x=1", timeout: .seconds(3)) }
        let publish = try await fake.received.first("publish") { $0.action == "publish" }
        #expect(publish.message["params"] == ["event": "user.login", "data": ["who": "ann"]])
        let describe = try await fake.received.first("describe") { $0.action == "describe" }
        #expect(describe.message["params"] == ["target": "Detail"])
        let open = try await fake.received.first("open") { $0.action == "open" }
        #expect(open.message["params"] == ["url": "app://Detail/show?x=1"])
        #expect(open.message["timeout_ms"] == 3000)
        await client.close()
    }

    @Test func subscriptionsGetMatchingEvents() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let users = try await withTimeout { try await client.events(["user.*"]) }
        let everything = try await withTimeout { try await client.events(["*"]) }
        let subscribe = try await fake.received.first("subscribe") { $0.action == "subscribe" }
        #expect(subscribe.message["params"] == ["events": ["user.*"]])

        let peer = subscribe.peer
        peer.send(["event": "user.login", "data": ["who": "ann"]])
        peer.send(["event": "other.thing"])
        peer.send(["event": "mediator.cancel", "data": ["id": 5]])
        peer.send(["event": "user.a.b"])
        peer.send(["event": "user"])
        peer.send(["event": "user.end"])

        let userEvents = try await withTimeout {
            var events: [MediatorEvent] = []
            for try await event in users {
                events.append(event)
                if event.name == "user.end" { break }
            }
            return events
        }
        #expect(userEvents.map(\.name) == ["user.login", "user.a.b", "user.end"])
        #expect(userEvents.first?.data == ["who": "ann"])

        let allEvents = try await withTimeout {
            var names: [String] = []
            for try await event in everything {
                names.append(event.name)
                if event.name == "user.end" { break }
            }
            return names
        }
        #expect(allEvents == ["user.login", "other.thing", "user.a.b", "user", "user.end"])

        // Unsubscribing the only pattern of a subscription ends its stream.
        let third = try await withTimeout { try await client.events(["x.y"]) }
        try await withTimeout { try await client.unsubscribe(["x.y"]) }
        let ended = try await withTimeout {
            var count = 0
            for try await _ in third { count += 1 }
            return count
        }
        #expect(ended == 0)
        await client.close()
    }

    @Test func aLostDaemonEndsSubscriptionsWithTheReason() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let events = try await withTimeout { try await client.events(["*"]) }
        let subscribe = try await fake.received.first("subscribe") { $0.action == "subscribe" }
        await subscribe.peer.close()
        let ending = try await withTimeout { () async -> MediatorError? in
            do throws(MediatorError) {
                for try await _ in events {}
                return nil
            } catch {
                return error
            }
        }
        #expect(ending?.code == .disconnected, "a lost daemon is not a normal end")
        #expect(ending?.message.contains(fake.path) == true, "\(String(describing: ending))")
        let reason = try await withTimeout { await client.waitUntilClosed() }
        #expect(reason == ending)
    }

    @Test func closingTheClientEndsSubscriptionsQuietly() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let events = try await withTimeout { try await client.events(["*"]) }
        await client.close()
        let count = try await withTimeout {
            var count = 0
            for try await _ in events { count += 1 }
            return count
        }
        #expect(count == 0)
        #expect(await client.waitUntilClosed() == nil, "closed by its client: no reason")
    }

    struct Point: Codable, Sendable, Equatable {
        var x: Int
        var y: Int
    }

    @Test func typedCalls() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let point = try await withTimeout { try await client.call(target: "Echo", action: "echo", params: Point(x: 1, y: -2), as: Point.self) }
        #expect(point == Point(x: 1, y: -2))
        let wrongType = await mediatorError { try await client.call(target: "Echo", action: "echo", params: Point(x: 1, y: 2), as: [String].self) }
        #expect(wrongType?.code == .invalidResult)
        let notObject = await mediatorError { try await client.call(target: "Echo", action: "echo", params: [1, 2], as: Point.self) }
        #expect(notObject?.code == .invalidParams)
        await client.close()
    }

    /// Converts directly; its Codable form refuses, so a call that works
    /// went the JSONValueConvertible way.
    struct DirectPoint: JSONValueConvertible, Equatable {
        struct NotThisWay: Error {}
        var x: Int
        var y: Int

        init(x: Int, y: Int) {
            self.x = x
            self.y = y
        }

        init(jsonValue: JSONValue) throws(JSONConversionError) {
            let members = try JSONConversion.members(jsonValue, of: "DirectPoint")
            x = try JSONConversion.required(members, "x")
            y = try JSONConversion.required(members, "y")
        }

        var jsonValue: JSONValue { ["x": x.jsonValue, "y": y.jsonValue] }
        init(from decoder: any Decoder) throws { throw NotThisWay() }
        func encode(to encoder: any Encoder) throws { throw NotThisWay() }
    }

    @Test func typedCallsWithDirectConversionSkipTheCoders() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let point = try await withTimeout { try await client.call(target: "Echo", action: "echo", params: DirectPoint(x: 1, y: -2), as: DirectPoint.self) }
        #expect(point == DirectPoint(x: 1, y: -2))
        let wrongType = await mediatorError { try await client.call(target: "Echo", action: "echo", params: DirectPoint(x: 1, y: 2), as: [DirectPoint].self) }
        #expect(wrongType?.code == .invalidResult)
        #expect(wrongType?.message.contains("expected an array") == true)
        let notObject = await mediatorError { try await client.call(target: "Echo", action: "echo", params: [1, 2], as: DirectPoint.self) }
        #expect(notObject?.code == .invalidParams)
        #expect(notObject?.message == "params must encode to a JSON object, not array")
        // Refused before sending: the daemon never saw it.
        try await withTimeout { try await client.ping() }
        #expect(!fake.received.items.contains { $0.message["params"] == [1, 2] })
        await client.close()
    }

    @Test func oversizedRequestIsRefusedLocally() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let big = JSONValue.string(String(repeating: "x", count: 1 << 20))
        let error = await mediatorError { try await client.call(target: "Echo", action: "echo", params: ["big": big]) }
        #expect(error?.code == .frameTooLarge)
        #expect(error?.delivered == .no, "never sent: a retry is safe")
        #expect(client.connection.pending.count == 0)
        try await withTimeout { try await client.ping() }
        await client.close()
    }

    @Test func badFramesFromThePeerAreAnsweredAndIgnored() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        let hello = try await fake.received.first("hello") { $0.action == "hello" }
        // A malformed oneway request gets no answer; the line that is not JSON does.
        hello.peer.sendRaw("{\"target\": \"Bad name!\", \"action\": \"a\"}\n")
        hello.peer.sendRaw("not json\n\r\n\n{\"id\": 99999, \"result\": 1}\n")
        let answer = try await fake.received.first("bad_request answer") { $0.message["error"] != nil }
        #expect(answer.message["error"]?["code"] == "bad_request")
        #expect(answer.message["id"] == .null)
        #expect(answer.message["error"]?["message"]?.stringValue?.contains("JSON") == true)
        try await withTimeout { try await client.ping() }
        #expect(fake.received.items.filter { $0.message["error"] != nil }.count == 1)
        // A request to a plain client (no component) is answered with an error.
        hello.peer.send(["id": "x1", "target": "Nobody", "action": "a"])
        let refused = try await fake.received.first("refusal") { $0.message["id"] == "x1" }
        #expect(refused.message["error"]?["code"] == "target_not_found")
        await client.close()
    }

    @Test func timeoutMilliseconds() {
        #expect(Connection.milliseconds(.seconds(5)) == 5000)
        #expect(Connection.milliseconds(.microseconds(1)) == 1)
        #expect(Connection.milliseconds(.milliseconds(1500) + .nanoseconds(1)) == 1501)
        #expect(Connection.milliseconds(.zero) == 1)
        #expect(Connection.milliseconds(.seconds(-3)) == 1)
    }

    @Test func eventPatterns() {
        #expect(EventPattern.matches("*", "a"))
        #expect(EventPattern.matches("user.*", "user.login"))
        #expect(EventPattern.matches("user.*", "user.a.b"))
        #expect(!EventPattern.matches("user.*", "user"))
        #expect(!EventPattern.matches("user.*", "users.x"))
        #expect(EventPattern.matches("user.login", "user.login"))
        #expect(!EventPattern.matches("user.login", "user.logout"))
    }
}
