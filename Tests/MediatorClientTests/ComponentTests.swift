import NIOConcurrencyHelpers
import NIOPosix
import Foundation
import InMemoryLogging
import Logging
import MediatorProtocol
import Testing

@testable import MediatorClient

struct Boom: Error, CustomStringConvertible {
    var description: String { "boom" }
}

struct Greeting: Codable, Sendable {
    var name: String
}

/// Runs `component` against `fake` until `body` is done, then cancels it and
/// waits for `run` to return.
func serving(
    _ component: Component, on fake: FakeDaemon, registrations: Mailbox<Int> = Mailbox(),
    _ body: (FakePeer) async throws -> Void
) async throws {
    let counter = NIOLockedValueBox(0)
    var component = component
    component.socketPath = fake.path
    component.connectionName = "comp"
    component.onRegistered = {
        registrations.post(counter.withLockedValue { count in
            count += 1
            return count
        })
    }
    let run = Task { [component] in try await component.run() }
    do {
        _ = try await registrations.first("registration") { _ in true }
        let register = try await fake.received.first("register") { $0.action == "register" }
        try await body(register.peer)
    } catch {
        run.cancel()
        throw error
    }
    run.cancel()
    try await withTimeout(5, "run to return") { try await run.value }
}

@Suite("Component against a fake daemon")
struct ComponentTests {
    static func makeComponent(signals: Mailbox<String>, executor: Component.HandlerExecutor = .connection) throws -> Component {
        var component = Component(target: "Svc", description: "a test service", mode: .pool, handlerExecutor: executor)
        component.addAction("echo", description: "echoes") { context in
            ["params": context.params, "caller": context.caller.map(\.json) ?? .null, "action": .string(context.action)]
        }
        let gate = Gate(count: 2)
        component.addAction("rendezvous") { _ in
            await gate.arrive()  // returns only when two calls run at once
            return "met"
        }
        component.addAction("block", params: try Schema(json: ["type": "object"]), url: false) { context in
            signals.post("started \(context.params["n"]?.intValue ?? 0)")
            do {
                try await Task.sleep(for: .seconds(60))
            } catch {
                signals.post("cancelled \(context.params["n"]?.intValue ?? 0)")
            }
            return "late"
        }
        component.addAction("fail") { context in
            if context.params["mediator"] == true {
                throw MediatorError(ErrorCode("custom"), "custom failure", data: ["k": 1])
            }
            throw Boom()
        }
        component.addAction("note") { context in
            signals.post("note \(context.params["text"]?.stringValue ?? "")")
            return .null
        }
        component.addAction("parts") { context in
            await context.send(partial: 1)
            await context.send(partial: 2)
            return 3
        }
        component.addAction("greet") { (greeting: Greeting, _: CallContext) in
            "hello \(greeting.name)"
        }
        component.addAction("nested") { context in
            try await context.client.call(target: "Echo", action: "echo", params: ["via": "component"])
        }
        component.handleNotFound { action, params, context in
            ["missing": .string(action), "params": params, "contextAction": .string(context.action)]
        }
        return component
    }

    @Test("A handler's plain error is logged through the component's logger: action, type and description",
          arguments: [Component.HandlerExecutor.connection, .concurrent])
    func plainErrorsAreLogged(executor: Component.HandlerExecutor) async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let logged = InMemoryLogHandler()
        var component = try Self.makeComponent(signals: Mailbox(), executor: executor)
        component.logger = Logger(label: "test") { _ in logged }
        try await serving(component, on: fake) { peer in
            peer.send(["id": 1, "target": "Svc", "action": "fail"])
            // Logged before the answer is sent.
            _ = try await fake.received.first("the failure's answer") { $0.id == 1 && $0.message["error"] != nil }
        }
        let failures = logged.entries.filter { $0.message == "handler failed" }
        #expect(failures.count == 1)
        #expect(failures.first?.level == .error)
        #expect(failures.first?.metadata == ["target": "Svc", "action": "fail", "type": "Boom", "error": "boom"])
    }

    @Test func registersItsSpecs() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let signals = Mailbox<String>()
        let component = try Self.makeComponent(signals: signals)
        try await serving(component, on: fake) { _ in
            let register = try await fake.received.first("register") { $0.action == "register" }
            let params = try #require(register.message["params"])
            #expect(params["target"] == "Svc")
            #expect(params["mode"] == "pool")
            #expect(params["description"] == "a test service")
            let names = params["actions"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
            #expect(names == ["echo", "rendezvous", "block", "fail", "note", "parts", "greet", "nested", "notFound"])
            let block = params["actions"]?.arrayValue?.first { $0["name"] == "block" }
            #expect(block == ["name": "block", "params": ["type": "object"], "url": false])
            let hello = try await fake.received.first("hello") { $0.action == "hello" }
            #expect(hello.message["params"]?["name"] == "comp")
        }
    }

    @Test(arguments: [Component.HandlerExecutor.connection, .concurrent])
    func servesCallsConcurrently(executor: Component.HandlerExecutor) async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let component = try Self.makeComponent(signals: Mailbox(), executor: executor)
        try await serving(component, on: fake) { peer in
            peer.send(["id": "r1", "target": "Svc", "action": "rendezvous"])
            peer.send(["id": "r2", "target": "Svc", "action": "rendezvous"])
            let answers = try await fake.received.wait(for: 2, "both rendezvous answers") {
                $0.message["result"] == "met"
            }
            #expect(Set(answers.compactMap { $0.id }) == ["r1", "r2"])
        }
    }

    @Test(arguments: [Component.HandlerExecutor.connection, .concurrent])
    func answersWithResultsAndErrors(executor: Component.HandlerExecutor) async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let signals = Mailbox<String>()
        let component = try Self.makeComponent(signals: signals, executor: executor)
        try await serving(component, on: fake) { peer in
            let caller: JSONValue = ["pid": 4100, "uid": 1000, "gid": 1000, "name": "cli"]
            peer.send(["id": 1, "target": "Svc", "action": "echo", "params": ["a": 1], "caller": caller])
            peer.send(["id": 2, "target": "Svc", "action": "fail", "params": ["mediator": true]])
            peer.send(["id": 3, "target": "Svc", "action": "fail"])
            peer.send(["id": 4, "target": "Svc", "action": "notFound", "params": ["action": "zap", "params": ["z": 1]]])
            peer.send(["id": 5, "target": "Svc", "action": "greet", "params": ["name": "ann"]])
            peer.send(["id": 6, "target": "Svc", "action": "greet", "params": ["nom": "ann"]])
            peer.send(["target": "Svc", "action": "note", "params": ["text": "oneway"]])
            peer.send(["id": 7, "target": "Svc", "action": "nested"])

            func response(_ id: JSONValue) async throws -> JSONValue {
                try await fake.received.first("response \(id)") {
                    $0.id == id && ($0.message["result"] != nil || $0.message["error"] != nil)
                }.message
            }
            #expect(try await response(1)["result"] == ["params": ["a": 1], "caller": caller, "action": "echo"])
            #expect(try await response(2)["error"] == ["code": "custom", "message": "custom failure", "data": ["k": 1]])
            #expect(
                try await response(3)["error"] == ["code": "failed", "message": "Boom: boom", "data": ["type": "Boom"]])
            #expect(
                try await response(4)["result"] == ["missing": "zap", "params": ["z": 1], "contextAction": "zap"])
            #expect(try await response(5)["result"] == "hello ann")
            #expect(try await response(6)["error"]?["code"] == "invalid_params")
            #expect(try await response(7)["result"] == ["via": "component"])
            _ = try await signals.first("oneway note") { $0 == "note oneway" }
            // The oneway call got no response: nothing but ids 1...7 were answered.
            let answered = fake.received.items.filter { $0.message["result"] != nil || $0.message["error"] != nil }
            #expect(answered.count == 7)
        }
    }

    /// A handler without `await` is answered where the call is read, with
    /// no task, when handlers run on the connection; with `.concurrent`,
    /// and for handlers that may suspend, each call gets its task.
    @Test(arguments: [Component.HandlerExecutor.connection, .concurrent])
    func aHandlerThatCannotSuspendRunsWithoutATaskOnTheConnection(executor: Component.HandlerExecutor) async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        var component = Component(target: "Svc", handlerExecutor: executor)
        component.addAction("immediate") { _ in
            withUnsafeCurrentTask { $0 == nil } ? "no task" : "task"
        }
        component.addAction("typed") { (greeting: Greeting, _: CallContext) in
            (withUnsafeCurrentTask { $0 == nil } ? "no task " : "task ") + greeting.name
        }
        component.addAction("suspends") { _ in
            await Task.yield()
            return withUnsafeCurrentTask { $0 == nil } ? "no task" : "task"
        }
        try await serving(component, on: fake) { peer in
            peer.send(["id": 1, "target": "Svc", "action": "immediate"])
            peer.send(["id": 2, "target": "Svc", "action": "typed", "params": ["name": "ann"]])
            peer.send(["id": 3, "target": "Svc", "action": "suspends"])
            peer.send(["id": 4, "target": "Svc", "action": "typed", "params": ["nom": "ann"]])
            let answers = try await fake.received.wait(for: 4, "four answers") {
                $0.message["result"] != nil || $0.message["error"] != nil
            }
            let byID = Dictionary(answers.map { ($0.id, $0.message) }, uniquingKeysWith: { first, _ in first })
            let inline = executor == .connection
            #expect(byID[1]?["result"] == (inline ? "no task" : "task"))
            #expect(byID[2]?["result"] == (inline ? "no task ann" : "task ann"))
            #expect(byID[3]?["result"] == "task")
            #expect(byID[4]?["error"]?["code"] == "invalid_params")
        }
    }

    @Test func typedActionsWithDirectConversionSkipTheCoders() async throws {
        typealias DirectPoint = ClientTests.DirectPoint
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        var component = Component(target: "Svc")
        component.addAction("flip") { (point: DirectPoint, _: CallContext) in DirectPoint(x: point.y, y: point.x) }
        component.addAction("flipLater") { (point: DirectPoint, _: CallContext) async in
            await Task.yield()
            return DirectPoint(x: point.y, y: point.x)
        }
        try await serving(component, on: fake) { peer in
            peer.send(["id": 1, "target": "Svc", "action": "flip", "params": ["x": 1, "y": 2]])
            peer.send(["id": 2, "target": "Svc", "action": "flipLater", "params": ["x": 3, "y": 4]])
            peer.send(["id": 3, "target": "Svc", "action": "flip", "params": ["x": "one", "y": 2]])
            let answers = try await fake.received.wait(for: 3, "three answers") {
                $0.message["result"] != nil || $0.message["error"] != nil
            }
            let byID = Dictionary(answers.map { ($0.id, $0.message) }, uniquingKeysWith: { first, _ in first })
            #expect(byID[1]?["result"] == ["x": 2, "y": 1])
            #expect(byID[2]?["result"] == ["x": 4, "y": 3])
            #expect(byID[3]?["error"]?["code"] == "invalid_params")
            #expect(byID[3]?["error"]?["message"]?.stringValue?.contains("x: expected an integer") == true)
        }
    }

    @Test func partialsOnlyWhenMoreWasAsked() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let component = try Self.makeComponent(signals: Mailbox())
        try await serving(component, on: fake) { peer in
            peer.send(["id": "m", "target": "Svc", "action": "parts", "more": true])
            let responses = try await fake.received.wait(for: 3, "three responses") { $0.id == "m" }
            #expect(responses.map(\.message) == [
                ["id": "m", "result": 1, "continues": true],
                ["id": "m", "result": 2, "continues": true],
                ["id": "m", "result": 3],
            ])
            peer.send(["id": "single", "target": "Svc", "action": "parts"])
            let single = try await fake.received.first("single response") { $0.id == "single" }
            #expect(single.message == ["id": "single", "result": 3])
            peer.send(["id": "after", "target": "Svc", "action": "echo"])
            _ = try await fake.received.first("echo after") { $0.id == "after" }
            #expect(fake.received.items.filter { $0.id == "single" }.count == 1)
        }
    }

    @Test(arguments: [Component.HandlerExecutor.connection, .concurrent])
    func cancelEventCancelsTheHandlerAndNothingIsSent(executor: Component.HandlerExecutor) async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let signals = Mailbox<String>()
        let component = try Self.makeComponent(signals: signals, executor: executor)
        try await serving(component, on: fake) { peer in
            peer.send(["id": 30, "target": "Svc", "action": "block", "params": ["n": 1]])
            peer.send(["id": 31, "target": "Svc", "action": "block", "params": ["n": 2]])
            _ = try await signals.wait(for: 2, "both handlers started") { $0.hasPrefix("started") }
            peer.send(["event": "mediator.cancel", "data": ["id": 30]])
            _ = try await signals.first("handler 1 cancelled") { $0 == "cancelled 1" }
            // A round trip through the component after the cancelled handler returned.
            peer.send(["id": "after", "target": "Svc", "action": "echo"])
            _ = try await fake.received.first("echo after cancel") { $0.id == "after" }
            #expect(!fake.received.items.contains { $0.id == 30 && $0.target == nil })
            #expect(!signals.items.contains("cancelled 2"), "only the call named by the event is cancelled")
        }
        // Stopping the component cancels the other handler; nothing is sent for it either.
        _ = try await signals.first("handler 2 cancelled on stop") { $0 == "cancelled 2" }
        #expect(!fake.received.items.contains { $0.id == 31 && $0.target == nil })
    }

    /// `.connection` runs handlers on the connection's event loop thread
    /// (no hand-off); `.concurrent` on Swift's global executor.
    @Test(arguments: [Component.HandlerExecutor.connection, .concurrent])
    func handlersRunWhereTheExecutorSays(executor: Component.HandlerExecutor) async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        var component = Component(target: "Svc", handlerExecutor: executor)
        component.addAction("where") { _ in
            let before = ConnectionLoop.isLoopThread
            try await Task.sleep(for: .milliseconds(1))  // and after a suspension
            let after = ConnectionLoop.isLoopThread
            return ["before": .bool(before), "after": .bool(after)]
        }
        try await serving(component, on: fake) { peer in
            peer.send(["id": "w", "target": "Svc", "action": "where"])
            let answer = try await fake.received.first("the answer") { $0.id == "w" }
            let onLoop = executor == .connection
            #expect(answer.message["result"] == ["before": .bool(onLoop), "after": .bool(onLoop)])
        }
    }

    @Test func stopEventEndsRunWithoutReconnecting() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let registrations = Mailbox<Int>()
        var component = try Self.makeComponent(signals: Mailbox())
        component.socketPath = fake.path
        component.onRegistered = { registrations.post(1) }
        let run = Task { [component] in try await component.run() }
        _ = try await registrations.first("registration") { _ in true }
        let register = try await fake.received.first("register") { $0.action == "register" }
        register.peer.send(["event": "mediator.stop", "data": ["target": "Svc", "reason": "idle"]])
        // run() returns by itself: no cancellation, and no second registration.
        try await withTimeout(5, "run to return after mediator.stop") { try await run.value }
        #expect(registrations.items.count == 1)
    }

    @Test func reconnectsAndRegistersAgainAfterTheDaemonRestarts() async throws {
        let path = temporarySocketPath()
        let first = try await FakeDaemon.start(path: path)
        let registrations = Mailbox<Int>()
        var component = try Self.makeComponent(signals: Mailbox())
        component.socketPath = path
        component.onRegistered = { registrations.post(registrations.items.count + 1) }
        let run = Task { [component] in try await component.run() }
        do {
            _ = try await registrations.first("first registration") { $0 == 1 }
            await first.stop()
            let second = try await FakeDaemon.start(path: path)
            defer { Task { await second.shutdown() } }
            let register = try await second.received.first(timeout: 10, "registration with the new daemon") {
                $0.action == "register"
            }
            #expect(register.message["params"]?["target"] == "Svc")
            _ = try await registrations.first("second registration") { $0 == 2 }
            // It serves on the new connection.
            register.peer.send(["id": "again", "target": "Svc", "action": "echo"])
            _ = try await second.received.first("served after reconnect") { $0.id == "again" }
        } catch {
            run.cancel()
            throw error
        }
        run.cancel()
        try await withTimeout(5, "run to return") { try await run.value }
    }

    @Test func oversizedResponsesBecomeFrameTooLarge() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        var component = Component(target: "Big")
        let huge = JSONValue.string(String(repeating: "x", count: (1 << 20) + 1))
        component.addAction("result") { _ in huge }
        component.addAction("partial") { context in
            await context.send(partial: huge)
            await context.send(partial: 1)
            return 2
        }
        try await serving(component, on: fake) { peer in
            peer.send(["id": "b1", "target": "Big", "action": "result"])
            peer.send(["id": "b2", "target": "Big", "action": "partial", "more": true])
            peer.send(["id": "b3", "target": "Big", "action": "result"])
            for id: JSONValue in ["b1", "b2", "b3"] {
                let answer = try await fake.received.first("answer \(id)") { $0.id == id }
                #expect(answer.message["error"]?["code"] == "frame_too_large")
            }
            #expect(fake.received.items.filter { $0.id == "b2" }.count == 1, "nothing after the final error")
        }
    }

    @Test func firstRegistrationFailureIsThrown() async throws {
        let fake = try await FakeDaemon.start { core, peer, message in
            if message["action"] == "register", let id = message["id"] {
                peer.send(["id": id, "error": ["code": "already_registered", "message": "taken"]])
                return
            }
            FakeDaemon.standard(core, peer, message)
        }
        defer { Task { await fake.shutdown() } }
        var component = try Self.makeComponent(signals: Mailbox())
        component.socketPath = fake.path
        let error = try await withTimeout { [component] in
            do {
                try await component.run()
                return nil as MediatorError?
            } catch let error as MediatorError {
                return error
            }
        }
        #expect(error?.code == .alreadyRegistered)
    }

    @Test func firstConnectionFailureIsThrown() async throws {
        var component = Component(target: "Svc")
        component.socketPath = temporarySocketPath()
        let error = try await withTimeout { [component] in
            do {
                try await component.run()
                return nil as MediatorError?
            } catch let error as MediatorError {
                return error
            }
        }
        #expect(error?.code == .unreachable)
    }
}
