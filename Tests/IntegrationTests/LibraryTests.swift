import Foundation
import MediatorClient
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Races `body` against `bound`; the tests never await a library call
/// without a bound of their own. When the bound passes, the test goes on
/// (with an error) even if `body` ignores its cancellation.
func within<T: Sendable>(
    _ what: String, _ bound: Duration = .seconds(10), _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = Race<T>()
    return try await withCheckedThrowingContinuation { continuation in
        race.start(continuation)
        let work = Task {
            do {
                race.finish(.success(try await body()))
            } catch {
                race.finish(.failure(error))
            }
        }
        let timer = Task {
            try? await Task.sleep(for: bound)
            if race.finish(.failure(HarnessError("timed out after \(bound): \(what)"))) { work.cancel() }
        }
        race.onFinish { timer.cancel() }
    }
}

/// The first of several outcomes resumes the continuation; the others are dropped.
final class Race<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, any Error>?
    private var outcome: Result<T, any Error>?
    private var finished = false
    private var cleanup: (@Sendable () -> Void)?

    func start(_ continuation: CheckedContinuation<T, any Error>) {
        lock.lock()
        self.continuation = continuation
        lock.unlock()
    }

    @discardableResult
    func finish(_ result: Result<T, any Error>) -> Bool {
        lock.lock()
        guard !finished, let continuation else {
            lock.unlock()
            return false
        }
        finished = true
        self.continuation = nil
        let cleanup = self.cleanup
        lock.unlock()
        continuation.resume(with: result)
        cleanup?()
        return true
    }

    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        lock.lock()
        if finished {
            lock.unlock()
            cleanup()
            return
        }
        self.cleanup = cleanup
        lock.unlock()
    }
}

/// Runs blocking harness work (raw sockets, polling) on a thread of its own,
/// so that the cooperative pool stays free for the library's tasks even on
/// a one-CPU machine.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// The code of the MediatorError that `body` throws (nil if it succeeds).
func errorCode(_ body: () async throws -> Void) async -> String? {
    do {
        try await body()
        return nil
    } catch let error as MediatorError {
        return error.code.rawValue
    } catch {
        return "not a MediatorError: \(error)"
    }
}

/// Counts what an in-test component saw, for checks from the test.
final class Observations: @unchecked Sendable {
    private let lock = NSLock()
    private var counters: [String: Int] = [:]
    func bump(_ key: String) {
        lock.lock()
        counters[key, default: 0] += 1
        lock.unlock()
    }
    func count(_ key: String) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return counters[key] ?? 0
    }
}

/// A handler's own error that chooses its wire code.
enum OwnError: Error, MediatorErrorConvertible {
    case noSuchKey(String)

    var mediatorError: MediatorError {
        switch self {
        case .noSuchKey(let key): MediatorError(ErrorCode("no_such_key"), "no key \(key)", data: ["key": .string(key)])
        }
    }
}

extension Component {
    /// `hang`: sleeps for a minute unless cancelled, counting "hang started"
    /// and "hang cancelled" in `seen`.
    mutating func hangAction(counting seen: Observations) {
        addAction("hang") { _ in
            seen.bump("hang started")
            do {
                try await Task.sleep(for: .seconds(60))
            } catch {
                seen.bump("hang cancelled")
                throw error
            }
            return "woke"
        }
    }
}

extension Integration {
    /// The Swift library (`MediatorClient`, `Component`) against the real
    /// daemon and components.
    @Suite("MediatorClient library")
    struct Library {
        @Test("call, concurrent calls on one client, errors, timeout and close")
        func calls() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let path = daemon.socketPath

            let client = try await within("connect") { try await MediatorClient.connect(socketPath: path, name: "lib-test") }
            let echoed = try await within("echo") { try await client.call(target: "Notes", action: "echo", params: ["a": 1]) }
            #expect(echoed["a"] == 1)
            #expect(echoed["caller"]?["pid"]?.intValue == Int64(getpid()))
            #expect(echoed["caller"]?["name"] == "lib-test")

            // 200 calls at once from as many tasks: each gets its own answer.
            let mismatches = try await within("200 concurrent calls", .seconds(60)) {
                try await withThrowingTaskGroup(of: Bool.self) { group in
                    for n in 0..<200 {
                        group.addTask {
                            let result = try await client.call(target: "Notes", action: "echo", params: ["n": .int(Int64(n))])
                            return result["n"] == .int(Int64(n))
                        }
                    }
                    return try await group.reduce(0) { $0 + ($1 ? 0 : 1) }
                }
            }
            #expect(mismatches == 0)

            #expect(await errorCode { _ = try await client.call(target: "Nobody", action: "x") } == "target_not_found")
            #expect(await errorCode { _ = try await client.call(target: "Notes", action: "get", params: ["id": 77]) } == "not_found")
            #expect(await errorCode { _ = try await client.call(target: "Notes", action: "add", params: ["text": 1]) } == "invalid_params")
            let timedOut = await errorCode {
                _ = try await within("a call with a timeout") {
                    try await client.call(target: "Notes", action: "sleep", params: ["ms": 30_000], timeout: .milliseconds(200))
                }
            }
            #expect(timedOut == "timeout")

            // Typed call.
            struct Echo: Codable, Sendable { var text: String; var count: Int }
            let typed = try await within("typed call") {
                try await client.call(target: "Notes", action: "echo", params: Echo(text: "hi", count: 2), as: Echo.self)
            }
            #expect(typed.text == "hi" && typed.count == 2)

            let list = try await within("list") { try await client.list() }
            #expect(list["targets"]?[0]?["target"] == "Notes")
            let url = try await within("open") { try await client.open("app://Notes/echo?q=1") }
            #expect(url["q"] == "1")

            // A call in flight when the client closes fails at once.
            let inFlight = Task { await errorCode { _ = try await client.call(target: "Notes", action: "sleep", params: ["ms": 30_000]) } }
            try await waitUntilAsync("the sleep to be in flight") {
                try daemon.listing("Notes")?["instances"]?[0]?["in_flight"]?.intValue == 1
            }
            await client.close()
            let closedCode = try await within("the call in flight to fail") { await inFlight.value }
            #expect(closedCode == "disconnected")
            #expect(await errorCode { _ = try await client.call(target: "Notes", action: "echo") } == "disconnected")
            #expect(await errorCode { _ = try await MediatorClient.connect(socketPath: world.directory.socket("none")) }
                    == "unreachable")
        }

        @Test("Cancelling the calling task cancels the call: cancelled, and mediator.cancel to the component")
        func taskCancellation() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try world.peer(daemon)
            _ = try component.register("Hang", actions: ["wait"])
            let path = daemon.socketPath
            let client = try await within("connect") { try await MediatorClient.connect(socketPath: path) }
            defer { Task { await client.close() } }

            let call = Task { await errorCode { _ = try await client.call(target: "Hang", action: "wait") } }
            let forwarded = try await offPool { try component.incomingRequest() }
            call.cancel()
            #expect(try await within("the cancelled call") { await call.value } == "cancelled")
            let cancel = try await offPool { try component.event("mediator.cancel") }
            #expect(cancel["data"]?["id"] == forwarded["id"])
        }

        /// Params whose `validate()` refuses more than 3 tags, as a generated
        /// type with `"maxItems": 3` does.
        struct Tagged: JSONValueConvertible, Equatable {
            var tags: [String]
            init(tags: [String]) { self.tags = tags }
            init(jsonValue: JSONValue) throws(JSONConversionError) {
                tags = try JSONConversion.required(try JSONConversion.members(jsonValue, of: "Tagged"), "tags")
            }
            var jsonValue: JSONValue { ["tags": tags.jsonValue] }
            func validate() throws(JSONConversionError) {
                try JSONConversion.checkItems(tags.count, maxItems: 3, at: ["tags"])
            }
        }

        @Test("Typed calls, sends and streams refuse params out of their bounds before sending: invalid_params")
        func paramsOutOfBoundsAreNotSent() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let path = daemon.socketPath
            let client = try await within("connect") { try await MediatorClient.connect(socketPath: path) }
            let tooMany = Tagged(tags: ["a", "b", "c", "d"])
            // Sent, these would be answered target_not_found (or, oneway, not at all).
            #expect(await errorCode { _ = try await client.call(target: "Nobody", action: "x", params: Tagged(tags: ["a"]), as: JSONValue.self) }
                    == "target_not_found")
            #expect(await errorCode { _ = try await client.call(target: "Nobody", action: "x", params: tooMany, as: JSONValue.self) } == "invalid_params")
            #expect(await errorCode { try await client.send(target: "Nobody", action: "x", params: tooMany) } == "invalid_params")
            let streamed = await errorCode {
                try await within("a stream of params out of bounds") {
                    for try await _ in client.stream(target: "Nobody", action: "x", params: tooMany, as: JSONValue.self) {}
                }
            }
            #expect(streamed == "invalid_params")
            await client.close()
        }

        @Test("stream yields countdown's partial results, then its final one")
        func stream() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.swiftExample(daemon)
            let path = daemon.socketPath
            let values = try await within("countdown") {
                let client = try await MediatorClient.connect(socketPath: path)
                var values: [JSONValue] = []
                for try await value in client.stream(target: "Weather", action: "countdown", params: ["from": 4, "interval_ms": 10]) {
                    values.append(value)
                }
                await client.close()
                return values
            }
            #expect(values == [4, 3, 2, 1, ["done": true]])

            // Stopping early cancels the rest.
            let first = try await within("the first value") {
                let client = try await MediatorClient.connect(socketPath: path)
                var first: JSONValue?
                for try await value in client.stream(target: "Weather", action: "countdown", params: ["from": 1000, "interval_ms": 20]) {
                    first = value
                    break
                }
                try await client.ping()
                await client.close()
                return first
            }
            #expect(first == 1000)

            let invalid = await errorCode {
                _ = try await within("invalid stream") {
                    let client = try await MediatorClient.connect(socketPath: path)
                    defer { Task { await client.close() } }
                    for try await _ in client.stream(target: "Weather", action: "countdown", params: ["from": "x"]) {}
                }
            }
            #expect(invalid == "invalid_params")

            // The stream's failure type is MediatorError: its code without a cast.
            let code = try await within("a typed stream error") { () async -> ErrorCode? in
                guard let client = try? await MediatorClient.connect(socketPath: path) else { return nil }
                defer { Task { await client.close() } }
                do throws(MediatorError) {
                    for try await _ in client.stream(target: "Weather", action: "countdown", params: ["from": "x"]) {}
                    return nil
                } catch {
                    return error.code
                }
            }
            #expect(code == .invalidParams)
        }

        @Test("subscribe gets what publish sends")
        func subscribeAndPublish() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let path = daemon.socketPath
            let listener = try await within("connect") { try await MediatorClient.connect(socketPath: path) }
            let publisher = try await within("connect") { try await MediatorClient.connect(socketPath: path) }
            let events = try await within("subscribe") { try await listener.events(["user.*"]) }
            #expect(try await within("publish") { try await publisher.publish("user.login", data: ["name": "ann"]) } == 1)
            #expect(try await within("publish") { try await publisher.publish("other") } == 0)
            #expect(try await within("publish") { try await publisher.publish("user.logout") } == 1)
            let received = try await within("two events") {
                var iterator = events.makeAsyncIterator()
                return [try await iterator.next(), try await iterator.next()]
            }
            #expect(received == [MediatorEvent(name: "user.login", data: ["name": "ann"]), MediatorEvent(name: "user.logout")])
            await listener.close()
            await publisher.close()
        }

        @Test("The example component (a Swift Component process) reconnects after a daemon restart")
        func exampleComponentReconnects() async throws {
            let world = try World()
            defer { world.close() }
            let first = try world.daemon()
            let weather = try world.swiftExample(first)
            let path = first.socketPath
            let before = try await within("forecast") {
                let client = try await MediatorClient.connect(socketPath: path)
                defer { Task { await client.close() } }
                return try await client.call(target: "Weather", action: "forecast", params: ["city": "Lyon"])
            }
            #expect(before["city"] == "Lyon")

            first.kill()  // SIGKILL: the socket file stays behind, stale
            let second = try world.daemon(socketPath: path)
            try weather.waitUntilReady(count: 2, within: .seconds(20))
            try second.waitForTarget("Weather")
            let after = try await within("forecast after the restart") {
                let client = try await MediatorClient.connect(socketPath: path)
                defer { Task { await client.close() } }
                return try await client.call(target: "Weather", action: "forecast", params: ["city": "Lyon"])
            }
            #expect(after == before)
            #expect(try second.listing("Weather")?["instances"]?[0]?["pid"]?.intValue == Int64(weather.pid))

            // A graceful restart too (SIGTERM): the component comes back again.
            second.terminate()
            #expect(try second.process.waitForExit() == .exited(0))
            let third = try world.daemon(socketPath: path)
            try weather.waitUntilReady(count: 3, within: .seconds(20))
            try third.waitForTarget("Weather")
        }

        @Test("The example component exits 0 on SIGTERM and its target goes away")
        func exampleComponentSIGTERM() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let weather = try world.swiftExample(daemon)
            weather.signal(SIGTERM)
            let ended = try weather.process.waitForExit(within: .seconds(10))
            #expect(ended == .exited(0), "\(weather.process.logTail())")
            try daemon.waitForTargetGone("Weather")
        }

        @Test("An in-test Component serves calls, is cancelled by timeouts, reconnects after a restart, unregisters on cancel")
        func inTestComponent() async throws {
            let world = try World()
            defer { world.close() }
            let first = try world.daemon()
            let path = first.socketPath
            let seen = Observations()

            var component = Component(target: "InTest", description: "in the test process")
            component.addAction("add", params: try Schema(json: ["type": "object", "required": ["a", "b"]])) { context in
                .int((context.params["a"]?.intValue ?? 0) + (context.params["b"]?.intValue ?? 0))
            }
            component.hangAction(counting: seen)
            component.addAction("fail") { _ in throw MediatorError(ErrorCode("custom"), "it failed", data: ["k": 1]) }
            component.addAction("own") { _ in throw OwnError.noSuchKey("k1") }
            component.socketPath = path
            component.connectionName = "in-test"
            component.onRegistered = { seen.bump("registered") }
            let frozen = component
            let service = Task { try await frozen.run() }
            defer { service.cancel() }

            try await waitUntilAsync("the first registration") { seen.count("registered") == 1 }
            let client = try await within("connect") { try await MediatorClient.connect(socketPath: path) }
            #expect(try await within("add") { try await client.call(target: "InTest", action: "add", params: ["a": 2, "b": 3]) } == 5)
            #expect(await errorCode { _ = try await client.call(target: "InTest", action: "add", params: ["a": 2]) } == "invalid_params")
            do {
                _ = try await within("fail") { try await client.call(target: "InTest", action: "fail") }
                Issue.record("fail succeeded")
            } catch let error as MediatorError {
                #expect(error == MediatorError(ErrorCode("custom"), "it failed", data: ["k": 1]))
            }
            do {
                _ = try await within("own") { try await client.call(target: "InTest", action: "own") }
                Issue.record("own succeeded")
            } catch let error as MediatorError {
                #expect(error == OwnError.noSuchKey("k1").mediatorError, "a handler's own error chose its code and data")
            }
            #expect(await errorCode { _ = try await client.call(target: "InTest", action: "hang", timeout: .milliseconds(200)) } == "timeout")
            try await waitUntilAsync("the handler to be cancelled") { seen.count("hang cancelled") == 1 }
            await client.close()

            first.kill()
            let second = try world.daemon(socketPath: path)
            try await waitUntilAsync("the second registration", within: .seconds(20)) { seen.count("registered") == 2 }
            let again = try await within("connect") { try await MediatorClient.connect(socketPath: path) }
            #expect(try await within("add after the restart") {
                try await again.call(target: "InTest", action: "add", params: ["a": 40, "b": 2])
            } == 42)

            service.cancel()
            try await within("run to return") { _ = try? await service.value }
            try second.waitForTargetGone("InTest")
            await again.close()
        }

        @Test("Ending a stream early cancels the component's handler; unsubscribe ends a subscription")
        func streamCancelAndUnsubscribe() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let path = daemon.socketPath
            let seen = Observations()
            var component = Component(target: "Ticker")
            component.addAction("ticks") { context in
                var n = 0
                do {
                    while true {
                        n += 1
                        await context.send(partial: .int(Int64(n)))
                        try await Task.sleep(for: .milliseconds(10))
                    }
                } catch {
                    seen.bump("ticks cancelled")
                    throw error
                }
            }
            component.socketPath = path
            component.onRegistered = { seen.bump("registered") }
            let frozen = component
            let service = Task { try await frozen.run() }
            defer { service.cancel() }
            try await waitUntilAsync("registration") { seen.count("registered") == 1 }

            let client = try await within("connect") { try await MediatorClient.connect(socketPath: path) }
            let firstTwo = try await within("two ticks") {
                var values: [JSONValue] = []
                for try await value in client.stream(target: "Ticker", action: "ticks") {
                    values.append(value)
                    if values.count == 2 { break }
                }
                return values
            }
            #expect(firstTwo == [1, 2])
            try await waitUntilAsync("the handler to be cancelled") { seen.count("ticks cancelled") == 1 }

            let events = try await within("subscribe") { try await client.events(["news.*"]) }
            let publisher = try await within("connect") { try await MediatorClient.connect(socketPath: path) }
            #expect(try await within("publish") { try await publisher.publish("news.one") } == 1)
            try await within("unsubscribe") { try await client.unsubscribe(["news.*"]) }
            #expect(try await within("publish") { try await publisher.publish("news.two") } == 0)
            let received = try await within("the subscription to end") {
                var names: [String] = []
                for try await event in events { names.append(event.name) }
                return names
            }
            #expect(received == ["news.one"])
            await client.close()
            await publisher.close()
        }

        @Test("A daemon that dies fails the client's calls in flight with disconnected")
        func daemonDiesUnderClient() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let path = daemon.socketPath
            let client = try await within("connect") { try await MediatorClient.connect(socketPath: path) }
            let call = Task { await errorCode { _ = try await client.call(target: "Notes", action: "sleep", params: ["ms": 60_000]) } }
            try await waitUntilAsync("the sleep to be in flight") {
                try daemon.listing("Notes")?["instances"]?[0]?["in_flight"]?.intValue == 1
            }
            daemon.kill()
            #expect(try await within("the call to fail") { await call.value } == "disconnected")
        }

        @Test("Component.run throws when its first registration is refused")
        func componentRegistrationRefused() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let path = daemon.socketPath
            var component = Component(target: "Notes")
            component.addAction("x") { _ in .null }
            component.socketPath = path
            let frozen = component
            let code = await errorCode { try await within("run") { try await frozen.run() } }
            #expect(code == "already_registered")
        }

        @Test("A component that crashes mid-call: the caller gets component_unavailable")
        func crashingComponent() async throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let weather = try world.swiftExample(daemon)
            let path = daemon.socketPath
            let code = await errorCode {
                _ = try await within("crash") {
                    let client = try await MediatorClient.connect(socketPath: path)
                    defer { Task { await client.close() } }
                    return try await client.call(target: "Weather", action: "crash")
                }
            }
            #expect(code == "component_unavailable")
            #expect(try weather.process.waitForExit() == .exited(3))
            try daemon.waitForTargetGone("Weather")
        }
    }
}
