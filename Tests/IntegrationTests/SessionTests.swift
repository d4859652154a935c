import Foundation
import MediatorClient
import MediatorProtocol
import Testing

/// What a test saw of a stream, in order, readable from any task.
final class Recorded<Item: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Item] = []
    private var ended: Result<Void, MediatorError>?

    func append(_ item: Item) {
        lock.lock()
        items.append(item)
        lock.unlock()
    }

    func end(_ outcome: Result<Void, MediatorError>) {
        lock.lock()
        ended = outcome
        lock.unlock()
    }

    var all: [Item] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }

    var outcome: Result<Void, MediatorError>? {
        lock.lock()
        defer { lock.unlock() }
        return ended
    }
}

extension Integration {
    /// `MediatorSession`: a client that connects again after a daemon
    /// restart and subscribes again by itself.
    @Suite("MediatorSession")
    struct Session {
        func isConnected(_ state: MediatorSession.ConnectionState) -> Bool {
            if case .connected = state { true } else { false }
        }

        @Test("Across a daemon restart: states say so, a waiting call completes, the subscription goes on")
        func survivesARestart() async throws {
            let world = try World()
            defer { world.close() }
            let first = try world.daemon()
            let path = first.socketPath
            let session = MediatorSession(socketPath: path, name: "session")
            let running = Task { await session.run() }
            defer { running.cancel() }

            let states = Recorded<MediatorSession.ConnectionState>()
            let watching = Task {
                for await state in session.states { states.append(state) }
                states.end(.success(()))
            }
            defer { watching.cancel() }
            let events = Recorded<String>()
            let stream = session.events(["news.*"])
            let listening = Task {
                do throws(MediatorError) {
                    for try await event in stream { events.append(event.name) }
                    events.end(.success(()))
                } catch {
                    events.end(.failure(error))
                }
            }
            defer { listening.cancel() }

            try await waitUntilAsync("connected") { states.all.contains(where: isConnected) }
            #expect(try await within("a call") { try await session.call(target: "mediator", action: "ping") } == .object([:]))

            // The subscription is made on the session's connection in a task
            // of its own: publish until it is seen.
            let publisher = try await within("connect") { try await MediatorClient.connect(socketPath: path) }
            try await waitUntilAsync("the first event") {
                _ = try? await publisher.publish("news.one")
                return events.all.contains("news.one")
            }
            await publisher.close()

            first.kill()
            try await waitUntilAsync("disconnected") {
                states.all.contains { if case .disconnected(let error) = $0 { error.code == .disconnected } else { false } }
            }
            // A call while there is no daemon waits for the next connection.
            let waiting = Task { try await session.call(target: "mediator", action: "ping", timeout: .seconds(20)) }
            let second = try world.daemon(socketPath: path)
            try await waitUntilAsync("connected again", within: .seconds(20)) { states.all.filter(isConnected).count == 2 }
            #expect(try await within("the waiting call") { try await waiting.value } == .object([:]))

            let again = try await within("connect") { try await MediatorClient.connect(socketPath: second.socketPath) }
            try await waitUntilAsync("an event after the restart") {
                _ = try? await again.publish("news.two")
                return events.all.contains("news.two")
            }
            await again.close()

            running.cancel()
            try await within("run to return") { await running.value }
            try await waitUntilAsync("the subscription and the states to end") {
                events.outcome != nil && states.outcome != nil
            }
            if case .failure(let error) = events.outcome { Issue.record("the subscription ended with \(error)") }
        }

        @Test("Without a daemon, a call fails with unreachable after its timeout")
        func noDaemon() async throws {
            let world = try World()
            defer { world.close() }
            let session = MediatorSession(socketPath: world.directory.path + "/none.sock")
            let running = Task { await session.run() }
            defer { running.cancel() }
            let code = await errorCode { _ = try await session.call(target: "mediator", action: "ping", timeout: .milliseconds(300)) }
            #expect(code == "unreachable")
        }
    }
}
