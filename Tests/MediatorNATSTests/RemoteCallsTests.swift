import Logging
import MediatorNATS
import MediatorProtocol
import Testing

@testable import MediatorNATSBridge

/// The importing side's waits, driven without NATS: announcements and
/// replies are handed in as messages, and the sweep is given its time.
@Suite("Remote calls: keep-alives, hosts that go away, delivery")
struct RemoteCallsTests {
    typealias Reply = BridgeMessages.Reply

    let calls = RemoteCalls(
        inbox: "_INBOX.test", subjects: BridgeSubjects(prefix: "mediator"), host: "hostA",
        livenessTimeout: .seconds(1), logger: Logger(label: "remote-calls-tests"))

    func announce(_ host: String, _ targets: [String], keepsAlive: Bool = true, leaving: Bool = false) {
        let announcement = BridgeMessages.Announcement(
            host: host, targets: targets.map { .init(name: $0, description: nil, actions: []) }, intervalMs: 2000,
            leaving: leaving, keepsAlive: keepsAlive)
        calls.heard(NATSMessage(subject: "mediator.hosts", payload: announcement.encoded))
    }

    func reply(_ token: String, _ reply: Reply, at time: ContinuousClock.Instant = .now) {
        calls.deliver(NATSMessage(subject: "_INBOX.test.\(token)", payload: reply.encoded), now: time)
    }

    func first(_ replies: AsyncStream<RemoteCalls.Answer>) async -> Reply? {
        for await answer in replies { return answer.reply }
        return nil
    }

    func expectUnavailable(_ reply: Reply?, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .error(let error)? = reply else {
            Issue.record("not an error: \(String(describing: reply))", sourceLocation: sourceLocation)
            return
        }
        #expect(error.code == .componentUnavailable, sourceLocation: sourceLocation)
        // Said, as null: the other host may have run it.
        #expect(error.data == ["delivered": .null], sourceLocation: sourceLocation)
    }

    @Test func aSilentCallToAHostThatSendsKeepAlivesEndsAfterTheLivenessTimeout() async {
        announce("hostB", ["Notes"])
        let start = ContinuousClock.now
        let (_, replies) = calls.expect("Notes", timeout: .seconds(20), now: start)
        calls.sweep(now: start + .milliseconds(1100))
        expectUnavailable(await first(replies))
    }

    @Test func aCallThatHearsKeepAlivesGoesOn() async {
        announce("hostB", ["Notes"])
        let start = ContinuousClock.now
        let (token, replies) = calls.expect("Notes", timeout: .seconds(20), now: start)
        reply(token, .alive(host: "hostB"), at: start + .milliseconds(800))
        reply(token, .result([1], continues: true), at: start + .milliseconds(1600))
        // Past the liveness timeout from the start, within it from the last word.
        calls.sweep(now: start + .milliseconds(2500))
        #expect(await first(replies) == .result([1], continues: true))
        reply(token, .result("done", continues: false))
        #expect(await first(replies) == .result("done", continues: false))
    }

    @Test func aCallThatAnOlderHostMayServeWaitsForItsTimeoutUntilAKeepAliveComes() async {
        announce("hostB", ["Notes"])
        announce("hostC", ["Notes"], keepsAlive: false)
        let start = ContinuousClock.now
        let (token, replies) = calls.expect("Notes", timeout: .seconds(20), now: start)
        calls.sweep(now: start + .seconds(5))
        reply(token, .result("late but fine", continues: false))
        #expect(await first(replies) == .result("late but fine", continues: false))

        // A keep-alive says a current host has it: silence then ends it.
        let (second, more) = calls.expect("Notes", timeout: .seconds(20), now: start)
        reply(second, .alive(host: "hostB"))
        calls.sweep(now: .now + .milliseconds(1100))
        expectUnavailable(await first(more))
        // The plain timeout (plus its second) ends the rest.
        let (_, last) = calls.expect("Notes", timeout: .seconds(20), now: start)
        calls.sweep(now: start + .milliseconds(21_001))
        guard case .error(let error)? = await first(last) else { Issue.record("no timeout"); return }
        #expect(error.code == .timeout && error.delivered == .unknown)
    }

    @Test func aHostThatLeavesFailsTheCallsItRunsAtOnce() async {
        announce("hostB", ["Notes"])
        announce("hostC", ["Notes"])
        let (onB, fromB) = calls.expect("Notes", timeout: .seconds(20))
        let (onC, fromC) = calls.expect("Notes", timeout: .seconds(20))
        reply(onB, .alive(host: "hostB"))
        reply(onC, .alive(host: "hostC"))
        announce("hostB", [], leaving: true)
        expectUnavailable(await first(fromB))
        reply(onC, .result(1, continues: false))
        #expect(await first(fromC) == .result(1, continues: false))
    }

    @Test func eachCallAsksForAKeepAliveEveryThirdOfTheLivenessTimeout() throws {
        #expect(calls.keepAliveMs == 334)
        var settings = NATSBridgeSettings(
            nats: NATSOptions(servers: ["nats://127.0.0.1:4222"]), exports: [], imports: [], host: "h", socketPath: "/s")
        #expect(settings.livenessTimeout == .seconds(3))
        try settings.validate()
        // Shorter than three keep-alives at the fastest rate a host sends them: refused.
        settings.livenessTimeout = .milliseconds(299)
        #expect(throws: NATSError.self) { try settings.validate() }
    }

    @Test func noRespondersMeansTheCallReachedNobody() async {
        let (token, replies) = calls.expect("Notes", timeout: nil)
        calls.deliver(NATSMessage(subject: "_INBOX.test.\(token)", isNoResponders: true))
        guard case .error(let error)? = await first(replies) else { Issue.record("no error"); return }
        #expect(error.code == .targetNotFound && error.delivered == .no)
    }
}
