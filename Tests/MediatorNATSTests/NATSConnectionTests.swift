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
        let inbox = NATSInbox()
        #expect(inbox.prefix.hasPrefix("_INBOX."))
        let answers = Inbox<NATSMessage>()
        let subscription = try connection.subscribe(inbox.wildcard) { answers.post($0) }
        try connection.flush()
        try connection.publish("nobody.here", reply: inbox.replySubject("1"), payload: Array("{}".utf8))
        let answer = try #require(try await answers.wait("the no-responders status").first)
        #expect(answer.isNoResponders)
        #expect(answer.payload.isEmpty)
        #expect(answer.subject == inbox.replySubject("1"))
        #expect(inbox.token(of: answer.subject) == "1")
        #expect(inbox.token(of: "_INBOX.other.1") == nil)
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
        let wrongToken = #expect(throws: NATSError.self) { try NATSConnection.connect(token) { _ in } }
        #expect(wrongToken?.isAuthorizationFailure == true, "\(String(describing: wrongToken))")
    }

    @Test(arguments: [
        (NATSOptions(servers: []), "no server URL"),
        (NATSOptions(servers: ["http://x:1"]), "expected nats://"),
        (NATSOptions(servers: ["nats://a:1,nats://b:2"]), "one URL per entry"),
        (NATSOptions(servers: NATSOptions.splitURLs(["nats://a:1,,nats://b:2"])), "an empty server URL"),
        (NATSOptions(servers: ["nats://a:x"]), "the port must be a number"),
        (NATSOptions(servers: ["nats://a:70000"]), "the port must be a number"),
        (NATSOptions(servers: ["nats://:4222"]), "no host"),
        (NATSOptions(servers: ["nats://a:1/path"]), "expected nats://"),
        ({ var options = NATSOptions(servers: ["nats://127.0.0.1:1"]); options.reconnectBufferSize = 0; return options }(),
         "reconnect buffer"),
        ({ var options = NATSOptions(servers: ["nats://127.0.0.1:1"]); options.timeout = .zero; return options }(),
         "timeout must be more than zero"),
    ])
    func badOptionsAreRefusedBeforeConnecting(options: NATSOptions, message: String) {
        let error = #expect(throws: NATSError.self) { try options.validate() }
        #expect(error?.text.contains(message) == true)
    }

    @Test func commaSeparatedURLsAreSplitAsNATSClientsDo() throws {
        #expect(NATSOptions.splitURLs(["nats://a:1, tls://b:2 ,nats://c", "nats://d:4"])
                == ["nats://a:1", "tls://b:2", "nats://c", "nats://d:4"])
        for good in ["nats://a:1", "tls://user:pw@host.example:4222", "nats://[::1]:4222", "nats://host", "nats://h:1/"] {
            #expect(throws: Never.self) { try NATSOptions(servers: [good]).validate() }
        }
        // A server down first in the list: the next one is used.
        let probe = try NATSServerProcess()
        let dead = probe.url
        probe.stop()
        let server = try NATSServerProcess()
        defer { server.stop() }
        var options = NATSOptions(servers: NATSOptions.splitURLs(["\(dead),\(server.url)"]))
        options.retryFirstConnect = false
        let connection = try NATSConnection.connect(options) { _ in }
        #expect(connection.connectedURL?.hasSuffix(":\(server.port)") == true, "\(String(describing: connection.connectedURL))")
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

/// TLS and NKey authentication against a real nats-server: a CA and a
/// server certificate made with openssl for the test; the NKey pair is the
/// example pair of the NATS documentation (a test key, public on purpose).
@Suite("NATS connection: TLS and NKeys", .enabled(if: NATSServerProcess.isInstalled && FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "nats-server or openssl is not installed"))
struct NATSSecureConnectionTests {
    static let nkeySeed = "SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY"
    static let nkeyPublic = "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"

    /// `openssl` with `arguments`, in `directory`; throws on failure.
    static func openssl(_ arguments: [String], in directory: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw NATSTestError("openssl \(arguments.first ?? "") failed") }
    }

    /// A CA and a certificate for 127.0.0.1 signed by it.
    static func certificates() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nats-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
                     "-subj", "/CN=mediator-test-ca"], in: directory)
        try openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
                     "-subj", "/CN=127.0.0.1"], in: directory)
        try Data("subjectAltName=IP:127.0.0.1\n".utf8).write(to: directory.appendingPathComponent("san.ext"))
        try openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                     "-out", "server.pem", "-days", "1", "-extfile", "san.ext"], in: directory)
        return directory
    }

    @Test func tlsWithTheServersCAAndNotWithout() async throws {
        let certs = try Self.certificates()
        defer { try? FileManager.default.removeItem(at: certs) }
        let server = try NATSServerProcess(arguments: [
            "--tls", "--tlscert", certs.appendingPathComponent("server.pem").path,
            "--tlskey", certs.appendingPathComponent("server.key").path,
        ])
        defer { server.stop() }
        var options = NATSOptions(servers: ["tls://127.0.0.1:\(server.port)"])
        options.retryFirstConnect = false
        options.tls = NATSOptions.TLS(caFile: certs.appendingPathComponent("ca.pem").path)
        let connection = try NATSConnection.connect(options) { _ in }
        #expect(connection.isConnected)
        let received = Inbox<NATSMessage>()
        let subscription = try connection.subscribe("over.tls") { received.post($0) }
        try connection.flush()
        try connection.publish("over.tls", payload: [1, 2, 3])
        #expect(try await received.wait("the message over TLS").first?.payload == [1, 2, 3])
        _ = subscription
        // Without the CA the server's certificate is not trusted.
        options.tls = NATSOptions.TLS()
        #expect(throws: NATSError.self) { try NATSConnection.connect(options) { _ in } }
    }

    @Test func nkeyWithItsSeedAndNotWithout() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nats-nkey-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("server.conf")
        try Data("authorization { users = [ { nkey: \(Self.nkeyPublic) } ] }\n".utf8).write(to: config)
        let seed = directory.appendingPathComponent("user.nk")
        try Data((Self.nkeySeed + "\n").utf8).write(to: seed)
        let server = try NATSServerProcess(arguments: ["-c", config.path])
        defer { server.stop() }
        var options = NATSOptions(servers: [server.url])
        options.retryFirstConnect = false
        options.nkeyPublicKey = Self.nkeyPublic
        options.nkeySeedFile = seed.path
        #expect(try NATSConnection.connect(options) { _ in }.isConnected)
        // Half an NKey is refused before connecting; none at all by the server.
        options.nkeyPublicKey = nil
        #expect(throws: NATSError.self) { try options.validate() }
        options.nkeySeedFile = nil
        #expect(throws: NATSError.self) { try NATSConnection.connect(options) { _ in } }
    }
}
