import Foundation
import InMemoryLogging
import Logging
import MediatorProtocol
import Testing

@testable import MediatorClient

/// The daemon's events about itself (docs/protocol.md): `mediator.reregister`
/// makes a component register and a client subscribe again on the same
/// connection; after `mediator.restarting` the library retries quickly.
@Suite struct RestartEventTests {
    static let reregister: JSONValue = ["event": "mediator.reregister", "data": ["reason": "state_lost"]]
    static let restarting: JSONValue = ["event": "mediator.restarting", "data": ["reason": "stopping"]]

    // MARK: - The schedule

    @Test func backoffDoublesUpToItsMaximumAndStartsAgainAfterReset() {
        var backoff = ReconnectBackoff(initial: .milliseconds(50), maximum: .milliseconds(300))
        #expect((0..<5).map { _ in backoff.next() } == [.milliseconds(50), .milliseconds(100), .milliseconds(200), .milliseconds(300), .milliseconds(300)])
        backoff.reset()
        #expect(backoff.next() == .milliseconds(50))
    }

    @Test func afterRestartingItRetriesQuicklyForTheWindowOnly() {
        var backoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .seconds(2))
        _ = backoff.next()
        _ = backoff.next()
        let now = ContinuousClock.now
        backoff.restarting(now: now)
        #expect((0..<40).map { _ in backoff.next(now: now) } == Array(repeating: ReconnectBackoff.restartRetryInterval, count: 40))
        #expect(backoff.next(now: now + ReconnectBackoff.restartRetryWindow) > ReconnectBackoff.restartRetryInterval)
        backoff.restarting(now: now)
        backoff.reset()
        #expect(backoff.next(now: now) == .milliseconds(100))
    }

    // MARK: - mediator.reregister

    @Test func aComponentRegistersAgainOnTheSameConnection() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let registrations = Mailbox<Int>()
        try await serving(try ComponentTests.makeComponent(signals: Mailbox()), on: fake, registrations: registrations) { peer in
            peer.send(Self.reregister)
            let registers = try await fake.received.wait(for: 2, "register again") { $0.action == "register" }
            #expect(registers.allSatisfy { $0.peer === peer })
            #expect(registers[1].message["params"]?["target"] == "Svc")
            // Still served on that connection.
            peer.send(["id": "after", "target": "Svc", "action": "echo"])
            _ = try await fake.received.first("answer after registering again") { $0.id == "after" }
            #expect(registrations.items.count == 1)  // not a reconnect
        }
    }

    @Test func aComponentWhoseRegisterAgainFailsConnectsAgain() async throws {
        // The second register on a connection is refused.
        let fake = try await FakeDaemon.start { core, peer, message in
            if message["action"]?.stringValue == "register", let id = message["id"] {
                let before = core.held.withLockedValue { held in
                    defer { held.append(Received(peer: peer, message: message)) }
                    return held.contains { $0.peer === peer }
                }
                if before {
                    peer.send(["id": id, "error": ["code": "already_registered", "message": "taken"]])
                    return
                }
            }
            FakeDaemon.standard(core, peer, message)
        }
        defer { Task { await fake.shutdown() } }
        let registrations = Mailbox<Int>()
        try await serving(try ComponentTests.makeComponent(signals: Mailbox()), on: fake, registrations: registrations) { peer in
            peer.send(Self.reregister)
            let registers = try await fake.received.wait(for: 3, timeout: 10, "register on a new connection") { $0.action == "register" }
            #expect(registers[1].peer === peer)
            #expect(registers[2].peer !== peer)
            _ = try await registrations.first(timeout: 10, "registered after reconnecting") { $0 == 2 }
        }
    }

    @Test func aClientSubscribesAgainAndItsSubscribersGoOn() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await MediatorClient.connect(socketPath: fake.path)
        let events = try await client.events(["again.*", "other.x"])
        let daemonEvents = try await client.events(["mediator.*"])
        let hello = try await fake.received.first("hello") { $0.action == "hello" }
        hello.peer.send(Self.reregister)
        let again = try await fake.received.first("subscribe again") { $0.action == "subscribe" && $0.id == nil }
        #expect(again.message["params"] == ["events": ["again.*", "mediator.*", "other.x"]])
        #expect(again.peer === hello.peer)
        var daemonIterator = daemonEvents.makeAsyncIterator()
        #expect(try await daemonIterator.next()?.name == "mediator.reregister")
        hello.peer.send(["event": "again.one"])
        var iterator = events.makeAsyncIterator()
        #expect(try await iterator.next()?.name == "again.one")
        await client.close()
    }

    @Test func aCallInFlightFailsWithComponentUnavailableAndTheConnectionStays() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let client = try await MediatorClient.connect(socketPath: fake.path)
        let lost = Task { () -> String? in
            do {
                _ = try await client.call(target: "Echo", action: "hang")
                return nil
            } catch {
                return (error as? MediatorError)?.code.rawValue ?? "\(error)"
            }
        }
        let call = try await fake.received.first("the call") { $0.action == "hang" }
        call.peer.send(Self.reregister)
        #expect(await lost.value == "component_unavailable")
        try await client.ping()
        #expect(fake.received.items.filter { $0.action == "hello" }.count == 1, "the same connection")
        await client.close()
    }

    // MARK: - mediator.restarting

    /// The durations a logger's lines say after `prefix`.
    static func delays(_ logged: InMemoryLogHandler, after prefix: String) -> [String] {
        logged.entries.compactMap { entry -> String? in
            let message = "\(entry.message)"
            guard let range = message.range(of: prefix) else { return nil }
            return String(message[range.upperBound...])
        }
    }

    @Test func aComponentRetriesQuicklyAfterRestarting() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let logged = InMemoryLogHandler()
        var component = try ComponentTests.makeComponent(signals: Mailbox())
        component.logger = Logger(label: "test") { _ in logged }
        try await serving(component, on: fake) { peer in
            peer.send(Self.restarting)
            await fake.stop()
            // Each try fails (nobody listens): every pause is the quick one,
            // where the usual backoff would have doubled to 100 ms and more.
            let quick = "\(ReconnectBackoff.restartRetryInterval)"
            try await withTimeout(10, "three failed tries") {
                while Self.delays(logged, after: "; retrying in ").count < 3 { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(Self.delays(logged, after: "reconnecting in ") == [quick])
            #expect(Self.delays(logged, after: "; retrying in ").prefix(3) == [quick, quick, quick])
        }
    }

    @Test func aSessionRetriesQuicklyAfterRestarting() async throws {
        let fake = try await FakeDaemon.start()
        defer { Task { await fake.shutdown() } }
        let logged = InMemoryLogHandler()
        var logger = Logger(label: "test") { _ in logged }
        logger.logLevel = .debug
        let session = MediatorSession(socketPath: fake.path, logger: logger)
        let run = Task { await session.run() }
        defer { run.cancel() }
        let hello = try await fake.received.first("hello") { $0.action == "hello" }
        hello.peer.send(Self.restarting)  // read before the close: same stream
        await fake.stop()
        let quick = "\(ReconnectBackoff.restartRetryInterval)"
        try await withTimeout(10, "three failed tries") {
            while Self.delays(logged, after: "retrying in ").count < 3 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(Self.delays(logged, after: "retrying in ").prefix(3) == [quick, quick, quick])
    }
}
