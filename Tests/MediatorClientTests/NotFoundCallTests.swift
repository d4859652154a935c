import Foundation
import MediatorProtocol
import Testing

@testable import MediatorClient

/// A `notFound` call whose params no daemon should have built (issue 10,
/// defect 7): the component answers `invalid_params` itself and its
/// handler never runs, since `serve --exec` turns the action into argv.
@Suite("notFound calls with bad params")
struct NotFoundCallTests {
    struct BadCall: Sendable, CustomTestStringConvertible {
        var label: String
        var params: JSONValue
        /// The member the error message must name.
        var member: String
        var testDescription: String { label }
    }

    static let badCalls: [BadCall] = [
        BadCall(label: "path and shell", params: ["action": "../../x; rm -rf", "params": [:]], member: "params.action"),
        BadCall(label: "empty", params: ["action": "", "params": [:]], member: "params.action"),
        BadCall(label: "option-like", params: ["action": "-rf"], member: "params.action"),
        BadCall(label: "129 bytes", params: ["action": .string(String(repeating: "a", count: 129))], member: "params.action"),
        BadCall(label: "a number", params: ["action": 42, "params": [:]], member: "params.action"),
        BadCall(label: "null", params: ["action": .null], member: "params.action"),
        BadCall(label: "missing", params: ["params": ["a": 1]], member: "params.action"),
        BadCall(label: "newline inside", params: ["action": "ok\nrm -rf /"], member: "params.action"),
        BadCall(label: "non-ASCII", params: ["action": "caf\u{E9}"], member: "params.action"),
        BadCall(label: "params a number", params: ["action": "zap", "params": 5], member: "params.params"),
        BadCall(label: "params a string", params: ["action": "zap", "params": "{}"], member: "params.params"),
        BadCall(label: "params an array", params: ["action": "zap", "params": [1]], member: "params.params"),
        BadCall(label: "params null", params: ["action": "zap", "params": .null], member: "params.params"),
    ]

    /// A component with one declared action and a fallback that reports each call it gets.
    static func component(handled: Mailbox<String>) -> Component {
        var component = Component(target: "Svc")
        component.addAction("echo") { context in context.params }
        component.handleNotFound { action, params, _ in
            handled.post(action)
            return ["missing": .string(action), "params": params]
        }
        return component
    }

    @Test(arguments: badCalls)
    func badNotFoundCallIsRefusedWithoutRunningTheHandler(_ bad: BadCall) async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let handled = Mailbox<String>()
        try await serving(Self.component(handled: handled), on: fake) { peer in
            peer.send(["id": "bad", "target": "Svc", "action": "notFound", "params": bad.params])
            let answer = try await fake.received.first("answer to the bad call") { $0.id == "bad" }
            let error = try #require(answer.message["error"], "\(answer.message.jsonText)")
            #expect(error["code"] == "invalid_params")
            let message = error["message"]?.stringValue ?? ""
            #expect(message.hasPrefix(bad.member + ":"), "\(message)")
            #expect(!message.contains("\n"), "the peer's bytes show escaped: \(message)")
            #expect(message.utf8.count < 300, "a long value is cut short: \(message)")

            // The same connection still serves, and the fallback still works.
            peer.send(["id": "good", "target": "Svc", "action": "notFound", "params": ["action": "zap"]])
            let good = try await fake.received.first("answer to the good call") { $0.id == "good" }
            #expect(good.message["result"] == ["missing": "zap", "params": [:]])
            #expect(handled.items == ["zap"], "the handler ran only for the good call")
        }
    }

    @Test func goodNamesAtTheEdgesOfTheRulesReachTheHandler() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let handled = Mailbox<String>()
        let longest = String(repeating: "b", count: NameRules.maxNameBytes)
        try await serving(Self.component(handled: handled), on: fake) { peer in
            for (index, name) in ["_private", "a.b-c_9", longest].enumerated() {
                // String ids: the component's own hello and register use small integers.
                let id = JSONValue.string("edge-\(index)")
                peer.send(["id": id, "target": "Svc", "action": "notFound",
                           "params": ["action": .string(name), "params": ["k": 1]]])
                let answer = try await fake.received.first("answer \(index)") { $0.id == id }
                #expect(answer.message["result"] == ["missing": .string(name), "params": ["k": 1]])
            }
            #expect(handled.items == ["_private", "a.b-c_9", longest])
        }
    }

    @Test(arguments: ["../../x; rm -rf", "", "-rf", String(repeating: "a", count: 129), "a\nb", " a", "a b"])
    func validatedActionNameRefusesBadNames(_ name: String) {
        #expect(throws: MediatorError.self) { try Component.validatedActionName(name, member: "action") }
        do {
            _ = try Component.validatedActionName(name, member: "action")
        } catch {
            #expect(error.code == .invalidParams)
            #expect(error.message.hasPrefix("action: "))
        }
    }

    @Test func validatedActionNameRefusesWhatIsNotAString() {
        for value: JSONValue? in [nil, .null, 42, true, ["a"], ["action": "a"]] {
            do {
                _ = try Component.validatedActionName(value, member: "params.action")
                Issue.record("\(value?.jsonText ?? "missing") passed")
            } catch {
                #expect(error.code == .invalidParams)
                #expect(error.message.hasPrefix("params.action: "))
            }
        }
        #expect((try? Component.validatedActionName("ok_1", member: "action")) == "ok_1")
    }
}
