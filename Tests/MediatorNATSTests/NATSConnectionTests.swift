import Foundation
import MediatorNATS
import Testing

/// The NATS layer against a real nats-server on loopback.
@Suite("NATS connection (real nats-server)", .enabled(if: NATSServerProcess.isInstalled, "nats-server is not installed"))
struct NATSConnectionTests {
    static func options(_ server: NATSServerProcess) -> NATSOptions {
        var options = NATSOptions(servers: [server.url])
        options.name = "mediator-tests"
        options.retryFirstConnect = false
        return options
    }

    @Test func publishAndSubscribeWithHeadersAndBinaryPayload() async throws {
        let server = try NATSServerProcess()
        defer { server.stop() }
        let connection = try NATSConnection.connect(Self.options(server)) { _ in }
        let received = Inbox<NATSMessage>()
        let subscription = try connection.subscribe("mediator.test.>") { received.post($0) }
        try connection.flush()
        let payload: [UInt8] = [0, 1, 2, 0xFF, 0x0A, 0x7B]
        try connection.publish("mediator.test.a", reply: "back.here", headers: ["Mediator-Caller-Uid": ["1000"], "Multi": ["x", "y"]],
                               payload: payload)
        let message = try #require(try await received.wait("the message").first)
        #expect(message.subject == "mediator.test.a")
        #expect(message.reply == "back.here")
        #expect(message.payload == payload)
        #expect(message.header("Mediator-Caller-Uid") == "1000")
        #expect(message.headers["Multi"] == ["x", "y"])
        #expect(!message.isNoResponders)
        subscription.unsubscribe()
        #expect(connection.isConnected)
        #expect(connection.connectedURL?.contains("127.0.0.1") == true)
    }

    @Test func aQueueGroupDeliversEachMessageOnce() async throws {
        let server = try NATSServerProcess()
        defer { server.stop() }
        let connection = try NATSConnection.connect(Self.options(server)) { _ in }
        let first = Inbox<NATSMessage>(), second = Inbox<NATSMessage>()
        let a = try connection.subscribe("pool", queue: "workers") { first.post($0) }
        let b = try connection.subscribe("pool", queue: "workers") { second.post($0) }
        try connection.flush()
        for index in 0..<200 { try connection.publish("pool", payload: Array("\(index)".utf8)) }
        try connection.flush()
        let deadline = Date().addingTimeInterval(10)
        while first.items.count + second.items.count < 200 && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let all = (first.items + second.items).map { String(decoding: $0.payload, as: UTF8.self) }
        #expect(all.count == 200)
        #expect(Set(all).count == 200)
        #expect(!first.items.isEmpty && !second.items.isEmpty, "both members got some")
        _ = (a, b)
    }

    @Test func aRequestNobodyServesGetsNoResponders() async throws {
        let server = try NATSServerProcess()
        defer { server.stop() }
        let connection = try NATSConnection.connect(Self.options(server)) { _ in }
        let inbox = NATSConnection.newInbox()
        #expect(inbox.hasPrefix("_INBOX."))
        let answers = Inbox<NATSMessage>()
        let subscription = try connection.subscribe(inbox + ".*") { answers.post($0) }
        try connection.flush()
        try connection.publish("nobody.here", reply: inbox + ".1", payload: Array("{}".utf8))
        let answer = try #require(try await answers.wait("the no-responders status").first)
        #expect(answer.isNoResponders)
        #expect(answer.subject == inbox + ".1")
        _ = subscription
    }

    @Test func userAndPasswordAndToken() async throws {
        let withUser = try NATSServerProcess(arguments: ["--user", "bridge", "--pass", "s3cret"])
        defer { withUser.stop() }
        var good = Self.options(withUser)
        good.user = "bridge"
        good.password = "s3cret"
        let connection = try NATSConnection.connect(good) { _ in }
        #expect(connection.isConnected)
        var bad = good
        bad.password = "wrong"
        let refused = #expect(throws: NATSError.self) { try NATSConnection.connect(bad) { _ in } }
        #expect(refused?.isAuthorizationFailure == true, "\(String(describing: refused))")

        let withToken = try NATSServerProcess(arguments: ["--auth", "t0ken"])
        defer { withToken.stop() }
        var token = Self.options(withToken)
        token.token = "t0ken"
        #expect(try NATSConnection.connect(token) { _ in }.isConnected)
        token.token = "other"
        #expect(throws: NATSError.self) { try NATSConnection.connect(token) { _ in } }
    }

    @Test(arguments: [
        (NATSOptions(servers: []), "no server URL"),
        (NATSOptions(servers: ["http://x:1"]), "expected nats://"),
    ])
    func badOptionsAreRefusedBeforeConnecting(options: NATSOptions, message: String) {
        let error = #expect(throws: NATSError.self) { try options.validate() }
        #expect(error?.text.contains(message) == true)
    }

    @Test func reconnectsAfterTheServerRestartsAndSubscriptionsWorkAgain() async throws {
        let server = try NATSServerProcess()
        let port = server.port
        let events = Inbox<NATSConnectionEvent>()
        var options = Self.options(server)
        options.reconnectWait = .milliseconds(50)
        let connection = try NATSConnection.connect(options) { events.post($0) }
        let received = Inbox<NATSMessage>()
        let subscription = try connection.subscribe("again") { received.post($0) }
        try connection.flush()

        server.stop()
        _ = try await events.wait("disconnected") { $0 == .disconnected }
        let restarted = try NATSServerProcess(port: port)
        defer { restarted.stop() }
        _ = try await events.wait("reconnected") { $0 == .reconnected }

        try connection.publish("again", payload: Array("after".utf8))
        try connection.flush()
        let message = try #require(try await received.wait("a message after the restart").first)
        #expect(message.payload == Array("after".utf8))

        connection.close()
        _ = try await events.wait("closed") { $0 == .closed }
        #expect(connection.isClosed)
        _ = subscription
    }

    @Test func theFirstConnectRetriesInTheBackgroundWhenAsked() async throws {
        // A port that nothing listens on yet: take one from a server, stop it.
        let probe = try NATSServerProcess()
        let port = probe.port
        probe.stop()
        var options = NATSOptions(servers: ["nats://127.0.0.1:\(port)"])
        options.retryFirstConnect = true
        options.reconnectWait = .milliseconds(50)
        let events = Inbox<NATSConnectionEvent>()
        let connection = try NATSConnection.connect(options) { events.post($0) }
        #expect(!connection.isConnected)
        let server = try NATSServerProcess(port: port)
        defer { server.stop() }
        _ = try await events.wait("connected") { $0 == .connected }
        #expect(connection.isConnected)
    }
}
