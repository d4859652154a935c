import Foundation
import Logging
import MediatorClient
import MediatorProtocol
import ServiceLifecycle
import Testing

/// A handler waits here until the test lets it go.
final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        await withCheckedContinuation { continuation in
            lock.lock()
            if isOpen {
                lock.unlock()
                continuation.resume()
                return
            }
            waiters.append(continuation)
            lock.unlock()
        }
    }

    func open() {
        lock.lock()
        isOpen = true
        let waiting = waiters
        waiters = []
        lock.unlock()
        for waiter in waiting { waiter.resume() }
    }
}

extension Integration {
    /// `Component` as a swift-service-lifecycle `Service` in a `ServiceGroup`,
    /// and the scoped client.
    @Suite("Component as a Service")
    struct ComponentService {
        static let logger = Logger(label: "test.service-group")

        func group(_ component: Component) -> ServiceGroup {
            ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: component)], logger: Self.logger))
        }

        @Test("Graceful shutdown unregisters first, lets the call in flight finish, then returns")
        func gracefulShutdownDrains() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let seen = Observations()
            let gate = Gate()

            var component = Component(target: "Drained")
            component.addAction("slow") { _ in
                seen.bump("slow started")
                await gate.wait()
                return "finished"
            }
            component.socketPath = daemon.socketPath
            component.connectionName = "drained"
            component.onRegistered = { seen.bump("registered") }
            let group = group(component)
            let running = Task { try await group.run() }
            defer { running.cancel() }
            try await waitUntilAsync("registration") { seen.count("registered") == 1 }

            let client = try await within("connect") { try await MediatorClient.connect(socketPath: daemon.socketPath) }
            let call = Task { try await client.call(target: "Drained", action: "slow") }
            try await waitUntilAsync("the handler to start") { seen.count("slow started") == 1 }

            await group.triggerGracefulShutdown()
            // Unregistered while its call is still in flight: new calls are not routed to it.
            try await offPool { try daemon.waitForTargetGone("Drained") }
            #expect(await errorCode { _ = try await client.call(target: "Drained", action: "slow") } == "target_not_found")
            #expect(seen.count("slow started") == 1)

            gate.open()
            #expect(try await within("the call in flight") { try await call.value } == "finished")
            try await within("the group to return") { try await running.value }
            await client.close()
        }

        @Test("Calls still in flight after the shutdown grace period are cancelled; the caller is told")
        func gracePeriodEnds() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let seen = Observations()

            var component = Component(target: "Stubborn")
            component.hangAction(counting: seen)
            component.socketPath = daemon.socketPath
            component.onRegistered = { seen.bump("registered") }
            component.shutdownGracePeriod = .milliseconds(200)
            let group = group(component)
            let running = Task { try await group.run() }
            defer { running.cancel() }
            try await waitUntilAsync("registration") { seen.count("registered") == 1 }

            let client = try await within("connect") { try await MediatorClient.connect(socketPath: daemon.socketPath) }
            let call = Task { () async -> String? in
                do {
                    _ = try await client.call(target: "Stubborn", action: "hang")
                    return nil
                } catch {
                    return (error as? MediatorError)?.code.rawValue ?? "\(error)"
                }
            }
            try await waitUntilAsync("the handler to start") { seen.count("hang started") == 1 }
            await group.triggerGracefulShutdown()
            try await within("the group to return") { try await running.value }
            // Cancelled, not awaited (shutdownGracePeriod promises no more): the
            // handler sees it on the connection's thread, which may come a few
            // milliseconds after run() returned.
            try await waitUntilAsync("the handler to see its cancellation") { seen.count("hang cancelled") == 1 }
            #expect(try await within("the caller's answer") { await call.value } == "component_unavailable")
            await client.close()
        }

        @Test("withMediatorClient closes the connection when its body returns")
        func scopedClient() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let (escaped, pong) = try await within("the scoped client") {
                try await withMediatorClient(socketPath: daemon.socketPath, name: "scoped") { client in
                    (client, try await client.call(target: "mediator", action: "ping"))
                }
            }
            #expect(pong == .object([:]))
            #expect(await errorCode { _ = try await escaped.call(target: "mediator", action: "ping") } == "disconnected")
        }
    }
}
