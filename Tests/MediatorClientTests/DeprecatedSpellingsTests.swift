import MediatorProtocol
import Testing

@testable import MediatorClient

/// The spellings kept as deprecated forwards for one release (issue 27)
/// still do what the new ones do. Each is called from a deprecated helper
/// below, so that the build shows no deprecation warning for them.
@Suite("Deprecated spellings still forward")
struct DeprecatedSpellingsTests {
    /// Through the protocol: calling a requirement warns of nothing, though
    /// its implementation is deprecated.
    static var oldSpellings: any OldSpellings.Type { DeprecatedCalls.self }

    struct Text: Codable, Sendable, Equatable {
        var text: String
    }

    @Test func unlabelledCallsForward() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await withTimeout { try await MediatorClient.connect(socketPath: fake.path) }
        // A dozen calls and oneways in a row: a bound for a machine under load, not a timing.
        try await withTimeout(30, "the old spellings' calls") {
            try await Self.oldSpellings.exercise(client, onewaySeen: { n in
                _ = try await fake.received.first("oneway \(n)") { $0.action == "echo" && $0.message["params"] == ["n": .int(Int64(n))] }
            })
        }
        await client.close()
    }

    @Test func unlabelledSessionCallForwards() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let session = MediatorSession(socketPath: fake.path)
        let running = Task { await session.run() }
        defer { running.cancel() }
        let echoed = try await withTimeout { try await Self.oldSpellings.sessionCall(session) }
        #expect(echoed == ["text": "session"])
    }

    @Test func actionAndNotFoundForward() {
        let component = Self.oldSpellings.declaredWithOldNames()
        #expect(component.actionSpecs.map(\.name) == [
            "plain", "immediate", "codable", "codableImmediate", "converted", "convertedImmediate",
            "spec", "specImmediate", "specConverted", "specConvertedImmediate", "notFound",
        ])
    }

    @Test func runWithArgumentsForwards() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let registrations = Mailbox<Int>()
        // The properties are not what the arguments say: the arguments win.
        var component = Component(target: "Old")
        component.socketPath = temporarySocketPath()
        component.connectionName = "from-property"
        let running = Task { [component] in
            try await Self.oldSpellings.run(component, socketPath: fake.path, name: "old-run") { registrations.post(1) }
        }
        defer { running.cancel() }
        _ = try await registrations.first("registration") { _ in true }
        let hello = try await fake.received.first("hello") { $0.action == "hello" }
        #expect(hello.message["params"]?["name"] == "old-run")
    }
}

/// Calls each old spelling once.
protocol OldSpellings {
    static func exercise(_ client: MediatorClient, onewaySeen: @Sendable (Int) async throws -> Void) async throws
    static func sessionCall(_ session: MediatorSession) async throws -> JSONValue
    static func declaredWithOldNames() -> Component
    static func run(_ component: Component, socketPath: String, name: String, onRegistered: @escaping @Sendable () async -> Void)
        async throws
}

/// Deprecated itself, so that the old spellings it calls warn of nothing.
enum DeprecatedCalls: OldSpellings {
    typealias Text = DeprecatedSpellingsTests.Text

    @available(*, deprecated)
    static func exercise(
        _ client: MediatorClient, onewaySeen: @Sendable (Int) async throws -> Void
    ) async throws {
        #expect(try await client.call("Echo", "echo", params: ["text": "plain"]) == ["text": "plain"])
        #expect(try await client.call("Echo", "echo", Text(text: "codable"), as: Text.self) == Text(text: "codable"))
        let converted: JSONValue = ["text": "converted"]
        #expect(try await client.call("Echo", "echo", converted, as: JSONValue.self) == converted)

        var streamed: [JSONValue] = []
        for try await value in client.stream("Echo", "echo", params: ["text": "stream"]) { streamed.append(value) }
        for try await value in client.stream("Echo", "echo", Text(text: "stream"), as: Text.self) {
            streamed.append(.string(value.text))
        }
        for try await value in client.stream("Echo", "echo", converted, as: JSONValue.self) { streamed.append(value) }
        #expect(streamed == [["text": "stream"], "stream", converted])

        struct Number: Codable, Sendable { var n: Int }
        try await client.send("Echo", "echo", params: ["n": 1])
        try await onewaySeen(1)
        try await client.send("Echo", "echo", Number(n: 2))
        try await onewaySeen(2)
        try await client.send("Echo", "echo", ["n": 3] as JSONValue)
        try await onewaySeen(3)
    }

    @available(*, deprecated)
    static func sessionCall(_ session: MediatorSession) async throws -> JSONValue {
        try await session.call("Echo", "echo", params: ["text": "session"])
    }

    @available(*, deprecated)
    static func declaredWithOldNames() -> Component {
        var component = Component(target: "Old")
        component.action("plain") { (context: CallContext) async throws -> JSONValue in context.params }
        component.action("immediate") { (context: CallContext) throws -> JSONValue in context.params }
        component.action("codable") { (text: Text, _: CallContext) async throws -> Text in text }
        component.action("codableImmediate") { (text: Text, _: CallContext) throws -> Text in text }
        component.action("converted") { (value: JSONValue, _: CallContext) async throws -> JSONValue in value }
        component.action("convertedImmediate") { (value: JSONValue, _: CallContext) throws -> JSONValue in value }
        component.action(ActionSpec(name: "spec")) { (text: Text, _: CallContext) async throws -> Text in text }
        component.action(ActionSpec(name: "specImmediate")) { (text: Text, _: CallContext) throws -> Text in text }
        component.action(ActionSpec(name: "specConverted")) { (value: JSONValue, _: CallContext) async throws -> JSONValue in
            value
        }
        component.action(ActionSpec(name: "specConvertedImmediate")) { (value: JSONValue, _: CallContext) throws -> JSONValue in
            value
        }
        component.notFound { action, _, _ in .string(action) }
        return component
    }

    @available(*, deprecated)
    static func run(
        _ component: Component, socketPath: String, name: String, onRegistered: @escaping @Sendable () async -> Void
    ) async throws {
        try await component.run(socketPath: socketPath, name: name, onRegistered: onRegistered)
    }
}
