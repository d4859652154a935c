import MediatorClient
import MediatorProtocol
import MediatorTesting
import Synchronization
import Testing

/// Client and server interceptors (issue 27) through the daemon's own
/// broker: what they add, refuse, retry, answer and observe reaches the
/// other side as the protocol carries it.
@Suite struct InterceptorTests {
    /// What the interceptors and handlers of a test saw, in order.
    final class Journal: Sendable {
        private let entries = Mutex<[String]>([])
        func note(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
        func count(_ entry: String) -> Int { all.filter { $0 == entry }.count }
    }

    final class Counter: Sendable {
        private let value = Atomic(0)
        /// Counts one more; the count after it.
        func next() -> Int { value.add(1, ordering: .relaxed).newValue }
        var count: Int { value.load(ordering: .relaxed) }
    }

    /// `object` with `key` set to `value`.
    static func setting(_ key: String, _ value: JSONValue, in object: JSONValue) -> JSONValue {
        var members = object.objectValue ?? [:]
        members[key] = value
        return .object(members)
    }

    /// Notes its name on the way in and on the way out.
    struct NotingClientInterceptor: ClientInterceptor {
        let name: String
        let journal: Journal
        func intercept(
            _ request: ClientRequest, next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
        ) async throws(MediatorError) -> ClientResponse {
            journal.note("\(name)>")
            defer { journal.note("<\(name)") }
            return try await next(request)
        }
    }

    struct NotingServerInterceptor: ServerInterceptor {
        let name: String
        let journal: Journal
        func intercept(
            _ context: CallContext, next: @Sendable (CallContext) async throws -> ServerResponse
        ) async throws -> ServerResponse {
            journal.note("\(name)>")
            defer { journal.note("<\(name)") }
            return try await next(context)
        }
    }

    /// Calls again, once, a call that failed with `component_unavailable`.
    struct RetryUnavailableOnce: ClientInterceptor {
        let journal: Journal
        func intercept(
            _ request: ClientRequest, next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
        ) async throws(MediatorError) -> ClientResponse {
            do throws(MediatorError) {
                return try await next(request)
            } catch {
                guard error.code == .componentUnavailable else { throw error }
                journal.note("retry")
                return try await next(request)
            }
        }
    }

    static func echo(target: String = "Echo", journal: Journal? = nil, interceptors: [any ServerInterceptor] = []) -> Component {
        var component = Component(target: target, interceptors: interceptors)
        component.addAction("echo") { context in
            journal?.note("handler")
            return context.params
        }
        return component
    }

    @Test func interceptorsRunInTheOrderGivenTheFirstOutermost() async throws {
        let journal = Journal()
        let server = Self.echo(
            journal: journal,
            interceptors: [NotingServerInterceptor(name: "s1", journal: journal), NotingServerInterceptor(name: "s2", journal: journal)])
        try await withTestDaemon { daemon in
            try await daemon.serving(server) {
                let interceptors: [any ClientInterceptor] = [
                    NotingClientInterceptor(name: "c1", journal: journal), NotingClientInterceptor(name: "c2", journal: journal),
                ]
                try await withMediatorClient(socketPath: daemon.socketPath, interceptors: interceptors) { client in
                    _ = try await client.call(target: "Echo", action: "echo")
                }
            }
        }
        #expect(journal.all == ["c1>", "c2>", "s1>", "s2>", "handler", "<s2", "<s1", "<c2", "<c1"])
    }

    /// A param and a metadata value added on the client reach the handler:
    /// the param as it is, the metadata's trace context as the protocol
    /// carries it.
    @Test func whatAClientInterceptorAddsReachesTheComponent() async throws {
        struct Tagging: ClientInterceptor {
            static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            func intercept(
                _ request: ClientRequest, next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
            ) async throws(MediatorError) -> ClientResponse {
                var request = request
                request.params = InterceptorTests.setting("tenant", "blue", in: request.params)
                request.metadata["traceparent"] = Self.traceparent
                request.metadata["local-only"] = "stays here"
                return try await next(request)
            }
        }
        var component = Component(target: "Echo")
        component.addAction("show") { context in
            ["params": context.params, "metadata": .object(context.metadata.mapValues { .string($0) })]
        }
        try await withTestDaemon { daemon in
            try await daemon.serving(component) {
                try await withMediatorClient(socketPath: daemon.socketPath, interceptors: [Tagging()]) { client in
                    let seen = try await client.call(target: "Echo", action: "show", params: ["n": 1])
                    #expect(seen["params"] == ["n": 1, "tenant": "blue"])
                    #expect(seen["metadata"] == ["traceparent": .string(Tagging.traceparent)])
                }
            }
        }
    }

    @Test func aRetryingInterceptorCallsAgainOnceOnComponentUnavailable() async throws {
        let journal = Journal()
        let attempts = Counter()
        var component = Component(target: "Flaky")
        component.addAction("get") { _ in
            // Unavailable the first time only.
            guard attempts.next() > 1 else {
                throw MediatorError(.componentUnavailable, "warming up")
            }
            return ["ok": true]
        }
        try await withTestDaemon { daemon in
            try await daemon.serving(component) {
                try await withMediatorClient(socketPath: daemon.socketPath, interceptors: [RetryUnavailableOnce(journal: journal)]) { client in
                    let answer = try await client.call(target: "Flaky", action: "get")
                    #expect(answer == ["ok": true])
                }
            }
        }
        #expect(attempts.count == 2)
        #expect(journal.all == ["retry"])
    }

    @Test func aRetryingInterceptorGivesUpAfterItsOneRetry() async throws {
        let journal = Journal()
        let attempts = Counter()
        var component = Component(target: "Down")
        component.addAction("get") { _ in
            _ = attempts.next()
            throw MediatorError(.componentUnavailable, "down for good")
        }
        try await withTestDaemon { daemon in
            try await daemon.serving(component) {
                try await withMediatorClient(socketPath: daemon.socketPath, interceptors: [RetryUnavailableOnce(journal: journal)]) { client in
                    let error = await #expect(throws: MediatorError.self) { try await client.call(target: "Down", action: "get") }
                    #expect(error?.code == .componentUnavailable)
                    #expect(error?.message == "down for good")
                }
            }
        }
        #expect(attempts.count == 2)
    }

    /// An interceptor that answers by itself sends nothing: the component
    /// is not called, and a target no one serves still answers.
    @Test func aShortCircuitingInterceptorSendsNoRequest() async throws {
        struct Cached: ClientInterceptor {
            func intercept(
                _ request: ClientRequest, next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
            ) async throws(MediatorError) -> ClientResponse {
                guard request.action == "cached" else { return try await next(request) }
                return ClientResponse(result: ["from": "cache", "kind": .string("\(request.kind)")])
            }
        }
        let journal = Journal()
        var component = Self.echo(journal: journal)
        component.addAction("cached") { _ in
            journal.note("handler")
            return ["from": "component"]
        }
        try await withTestDaemon { daemon in
            try await daemon.serving(component) {
                try await withMediatorClient(socketPath: daemon.socketPath, interceptors: [Cached()]) { client in
                    #expect(try await client.call(target: "Echo", action: "cached") == ["from": "cache", "kind": "call"])
                    #expect(try await client.call(target: "Nowhere", action: "cached") == ["from": "cache", "kind": "call"])
                    var streamed: [JSONValue] = []
                    for try await value in client.stream(target: "Nowhere", action: "cached") { streamed.append(value) }
                    #expect(streamed == [["from": "cache", "kind": "stream"]])
                    // The others still go through.
                    #expect(try await client.call(target: "Echo", action: "echo", params: ["n": 1]) == ["n": 1])
                }
            }
        }
        #expect(journal.all == ["handler"], "only the echo reached the component")
    }

    /// An authorization check: the caller gets exactly the interceptor's
    /// code and message, and the handler never runs.
    @Test func aServerInterceptorRejectsWithForbidden() async throws {
        struct OnlyNamed: ServerInterceptor {
            func intercept(
                _ context: CallContext, next: @Sendable (CallContext) async throws -> ServerResponse
            ) async throws -> ServerResponse {
                guard context.caller?.name == "trusted" else {
                    throw MediatorError(.forbidden, "\(context.target)/\(context.action) is for trusted callers")
                }
                return try await next(context)
            }
        }
        let journal = Journal()
        try await withTestDaemon { daemon in
            try await daemon.serving(Self.echo(journal: journal, interceptors: [OnlyNamed()])) {
                try await withMediatorClient(socketPath: daemon.socketPath, name: "stranger") { client in
                    let error = await #expect(throws: MediatorError.self) {
                        try await client.call(target: "Echo", action: "echo")
                    }
                    #expect(error?.code == .forbidden)
                    #expect(error?.message == "Echo/echo is for trusted callers")
                }
                #expect(journal.all.isEmpty)
                try await withMediatorClient(socketPath: daemon.socketPath, name: "trusted") { client in
                    let answer = try await client.call(target: "Echo", action: "echo", params: ["n": 2])
                    #expect(answer == ["n": 2])
                }
            }
        }
        #expect(journal.all == ["handler"])
    }

    /// A handler's own error, which would be answered as `failed`, mapped
    /// by an interceptor to a code of its own.
    @Test func aServerInterceptorMapsTheHandlersError() async throws {
        struct QuotaExceeded: Error { var limit: Int }
        struct MapQuota: ServerInterceptor {
            func intercept(
                _ context: CallContext, next: @Sendable (CallContext) async throws -> ServerResponse
            ) async throws -> ServerResponse {
                do {
                    return try await next(context)
                } catch let error as QuotaExceeded {
                    throw MediatorError(ErrorCode("quota_exceeded"), "over the quota", data: ["limit": .int(Int64(error.limit))])
                }
            }
        }
        var component = Component(target: "Store", interceptors: [MapQuota()])
        component.addAction("put") { _ in throw QuotaExceeded(limit: 10) }
        try await withTestDaemon { daemon in
            try await daemon.serving(component) {
                try await daemon.withClient { client in
                    let error = await #expect(throws: MediatorError.self) { try await client.call(target: "Store", action: "put") }
                    #expect(error?.code == ErrorCode("quota_exceeded"))
                    #expect(error?.message == "over the quota")
                    #expect(error?.data == ["limit": 10])
                }
            }
        }
    }

    /// A stream goes through both sides' interceptors: the partials arrive
    /// as they are sent, the interceptors see the final response.
    @Test func streamsPassThroughInterceptors() async throws {
        let journal = Journal()
        struct FinalNoting: ClientInterceptor {
            let journal: Journal
            func intercept(
                _ request: ClientRequest, next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
            ) async throws(MediatorError) -> ClientResponse {
                var response = try await next(request)
                journal.note("client saw \(request.kind) final \(response.result)")
                response.result = ["final": response.result]
                return response
            }
        }
        struct ServerFinalNoting: ServerInterceptor {
            let journal: Journal
            func intercept(
                _ context: CallContext, next: @Sendable (CallContext) async throws -> ServerResponse
            ) async throws -> ServerResponse {
                let response = try await next(context)
                journal.note("server saw final \(response.result)")
                return response
            }
        }
        var component = Component(target: "Counter", interceptors: [ServerFinalNoting(journal: journal)])
        component.addAction("count") { context in
            await context.send(partial: 1)
            await context.send(partial: 2)
            return 3
        }
        try await withTestDaemon { daemon in
            try await daemon.serving(component) {
                try await withMediatorClient(socketPath: daemon.socketPath, interceptors: [FinalNoting(journal: journal)]) { client in
                    var values: [JSONValue] = []
                    for try await value in client.stream(target: "Counter", action: "count") { values.append(value) }
                    #expect(values == [1, 2, ["final": 3]])
                }
            }
        }
        #expect(journal.all == ["server saw final 3", "client saw stream final 3"])
    }

    /// Metrics: both sides time each call and see how it ended.
    @Test func aMetricsInterceptorObservesDurationsAndOutcomes() async throws {
        final class Timings: Sendable {
            let entries = Mutex<[(String, Duration)]>([])
        }
        struct ClientTiming: ClientInterceptor {
            let timings: Timings
            func intercept(
                _ request: ClientRequest, next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
            ) async throws(MediatorError) -> ClientResponse {
                let start = ContinuousClock.now
                do throws(MediatorError) {
                    let response = try await next(request)
                    timings.entries.withLock { $0.append(("client \(request.action) ok", .now - start)) }
                    return response
                } catch {
                    timings.entries.withLock { $0.append(("client \(request.action) \(error.code.rawValue)", .now - start)) }
                    throw error
                }
            }
        }
        struct ServerTiming: ServerInterceptor {
            let timings: Timings
            func intercept(
                _ context: CallContext, next: @Sendable (CallContext) async throws -> ServerResponse
            ) async throws -> ServerResponse {
                let start = ContinuousClock.now
                defer { timings.entries.withLock { $0.append(("server \(context.action)", .now - start)) } }
                return try await next(context)
            }
        }
        let timings = Timings()
        let pause = Duration.milliseconds(50)
        var component = Component(target: "Slow", interceptors: [ServerTiming(timings: timings)])
        component.addAction("wait") { _ in
            try await Task.sleep(for: pause)
            return [:]
        }
        component.addAction("fail") { _ in throw MediatorError(.badRequest, "no") }
        try await withTestDaemon { daemon in
            try await daemon.serving(component) {
                try await withMediatorClient(socketPath: daemon.socketPath, interceptors: [ClientTiming(timings: timings)]) { client in
                    _ = try await client.call(target: "Slow", action: "wait")
                    _ = try? await client.call(target: "Slow", action: "fail")
                }
            }
        }
        let entries = timings.entries.withLock { $0 }
        try #require(entries.map(\.0) == ["server wait", "client wait ok", "server fail", "client fail bad_request"])
        // A lower bound only: the handler slept that long inside both.
        #expect(entries[0].1 >= pause)
        #expect(entries[1].1 >= entries[0].1)
    }

    /// The typed calls (params and results as JSON text) go through the
    /// interceptors too: they read the params and replace the result.
    @Test func typedCallsPassThroughInterceptors() async throws {
        struct Params: Codable, Sendable { var word: String }
        struct Answer: Codable, Sendable, Equatable { var word: String; var seen: Bool }
        struct Rewriting: ClientInterceptor {
            func intercept(
                _ request: ClientRequest, next: @Sendable (ClientRequest) async throws(MediatorError) -> ClientResponse
            ) async throws(MediatorError) -> ClientResponse {
                var request = request
                let word = request.params["word"]?.stringValue ?? "?"
                request.params = InterceptorTests.setting("word", .string(word.uppercased()), in: request.params)
                var response = try await next(request)
                response.result = InterceptorTests.setting("seen", true, in: response.result)
                return response
            }
        }
        var component = Component(target: "Echo")
        component.addAction("echo") { context in ["word": context.params["word"] ?? .null, "seen": false] }
        try await withTestDaemon { daemon in
            try await daemon.serving(component) {
                try await withMediatorClient(socketPath: daemon.socketPath, interceptors: [Rewriting()]) { client in
                    let answer = try await client.call(target: "Echo", action: "echo", params: Params(word: "hi"), as: Answer.self)
                    #expect(answer == Answer(word: "HI", seen: true))
                }
            }
        }
    }
}
