import Foundation
import MediatorNATS
import Testing

/// What libnats holds of ours (the events closure, the handlers) is let go
/// exactly when it says no callback can run any more; asynchronous errors
/// arrive typed. Against a real nats-server; run in debug, where a double
/// release or a use after free traps.
@Suite("NATS connection: lifetimes and errors (real nats-server)",
       .enabled(if: NATSServerProcess.isInstalled, "nats-server is not installed"))
struct NATSConnectionLifetimeTests {
    /// Held by a closure given to libnats: gone once libnats let it go.
    final class Witness: Sendable {}

    static func options(_ server: NATSServerProcess) -> NATSOptions {
        var options = NATSOptions(servers: [server.url])
        options.retryFirstConnect = false
        return options
    }

    /// Waits, at most `seconds`, until `condition` holds.
    static func eventually(_ what: String, seconds: Double = 10, _ condition: () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { throw NATSTestError("timed out waiting until \(what)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func unsubscribeAndCloseLetGoOfTheClosures() async throws {
        let server = try NATSServerProcess()
        defer { server.stop() }
        let events = Inbox<NATSConnectionEvent>()
        weak var eventsWitness: Witness?
        weak var firstWitness: Witness?
        weak var secondWitness: Witness?
        let connection: NATSConnection
        let first: NATSSubscription, second: NATSSubscription
        do {
            let forEvents = Witness(), forFirst = Witness(), forSecond = Witness()
            (eventsWitness, firstWitness, secondWitness) = (forEvents, forFirst, forSecond)
            connection = try NATSConnection.connect(Self.options(server)) { [forEvents] event in
                _ = forEvents
                events.post(event)
            }
            first = try connection.subscribe("lifetime.first") { [forFirst] _ in _ = forFirst }
            second = try connection.subscribe("lifetime.second") { [forSecond] _ in _ = forSecond }
        }
        try connection.publish("lifetime.first", payload: [1])
        try connection.flush()

        first.unsubscribe()
        first.unsubscribe()  // idempotent
        try await Self.eventually("the unsubscribed handler is released") { firstWitness == nil }
        #expect(!first.isValid)
        #expect(secondWitness != nil, "a live subscription keeps its handler")

        connection.close()
        _ = try await events.wait("closed") { $0 == .closed }
        try await Self.eventually("close releases the other handler and the events closure") {
            secondWitness == nil && eventsWitness == nil
        }
        #expect(connection.isClosed && !connection.isConnected)
        #expect(!second.isValid)
        connection.close()  // idempotent
        // A closed connection refuses typed, and does not crash.
        #expect(throws: NATSError.self) { try connection.publish("lifetime.first", payload: []) }
        #expect(throws: NATSError.self) { try connection.subscribe("lifetime.more") { _ in } }
        #expect(events.items.filter { $0 == .closed }.count == 1)
    }

    @Test func droppingTheObjectsWithoutCloseLetsGoToo() async throws {
        let server = try NATSServerProcess()
        defer { server.stop() }
        let events = Inbox<NATSConnectionEvent>()
        weak var eventsWitness: Witness?
        weak var handlerWitness: Witness?
        weak var droppedConnection: NATSConnection?
        do {
            let forEvents = Witness(), forHandler = Witness()
            (eventsWitness, handlerWitness) = (forEvents, forHandler)
            let connection = try NATSConnection.connect(Self.options(server)) { [forEvents] event in
                _ = forEvents
                events.post(event)
            }
            droppedConnection = connection
            let subscription = try connection.subscribe("dropped") { [forHandler] _ in _ = forHandler }
            try connection.flush()
            _ = subscription
        }
        // The subscription kept the connection; both went at the end of the block.
        #expect(droppedConnection == nil)
        _ = try await events.wait("closed, from deinit") { $0 == .closed }
        try await Self.eventually("the handler and events closures are released") {
            handlerWitness == nil && eventsWitness == nil
        }
    }

    @Test func aRefusedPublishArrivesAsATypedErrorEvent() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nats-perm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("server.conf")
        try Data("""
            authorization { users = [ { user: limited, password: pw, permissions: { publish: { deny: "forbidden.>" } } } ] }

            """.utf8).write(to: config)
        let server = try NATSServerProcess(arguments: ["-c", config.path])
        defer { server.stop() }
        var options = Self.options(server)
        options.user = "limited"
        options.password = "pw"
        let events = Inbox<NATSConnectionEvent>()
        let connection = try NATSConnection.connect(options) { events.post($0) }
        try connection.publish("forbidden.here", payload: [1])
        try? connection.flush()  // the server answers the PING after its -ERR
        let event = try #require(try await events.wait("the error event") {
            if case .error = $0 { true } else { false }
        }.first)
        guard case .error(let error) = event else { return }
        #expect(error.isAuthorizationFailure, "\(error)")
        #expect(error.text.contains("Permissions Violation"), "\(error)")
        #expect(connection.isConnected, "a refused publish does not end the connection")
        connection.close()
    }
}
