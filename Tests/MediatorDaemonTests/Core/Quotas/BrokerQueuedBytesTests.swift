import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// `max_queued_bytes_per_uid`: the host reports each connection's backlog,
/// the broker sums them per uid, refuses calls and skips events toward a uid
/// past the quota, and disconnects its worst reader at twice the quota.
@Suite("Broker: bytes queued per uid")
struct BrokerQueuedBytesTests {
    static let alice = PeerCredentials(pid: 500, uid: 1000, gid: 1000, executable: "/usr/bin/alice-tool")
    static let bob = PeerCredentials(pid: 600, uid: 1001, gid: 1001)
    static let root = PeerCredentials(pid: 1, uid: 0, gid: 0)
    static let limit = 1000

    /// Alice serves `Svc` on connection 1 (and has connection 2); bob calls from 3.
    func setUp() -> BrokerDriver {
        let d = BrokerDriver { $0.maxQueuedBytesPerUID = Self.limit }
        d.connect(1, credentials: Self.alice)
        d.connect(2, credentials: Self.alice)
        d.connect(3, credentials: Self.bob)
        d.register("Svc", from: 1)
        return d
    }

    @Test func figuresAddUpOverAUIDsConnections() {
        let d = setUp()
        d.queued(1, 300)
        d.queued(2, 500)
        d.queued(3, 70)
        #expect(d.broker.usage(.queuedBytes, uid: 1000) == 800)
        #expect(d.broker.usage(.queuedBytes, uid: 1001) == 70)
        d.queued(1, 100)
        #expect(d.broker.usage(.queuedBytes, uid: 1000) == 600)
        d.disconnect(2)
        #expect(d.broker.usage(.queuedBytes, uid: 1000) == 100, "a closed connection's backlog goes with it")
        d.queued(1, 0)
        d.queued(3, 0)
        #expect(d.broker.quotas.nothingQueued, "no backlog: routing pays one emptiness check")
    }

    @Test func aCallTowardAUIDPastItsQuotaIsRefusedNamingTheQuota() {
        let d = setUp()
        d.queued(1, 600)
        d.queued(2, 401)  // alice's total, 1001, is past the quota; connection 1 alone is not
        d.send(#"{"id":7,"target":"Svc","action":"a"}"#, from: 3)
        let answer = d.takeOne(3)
        #expect(answer?["id"] == 7)
        #expect(errorCode(answer) == "overloaded")
        #expect(answer?["error"]?["data"] == #"{"quota":"max_queued_bytes_per_uid","limit":1000,"delivered":false}"#.json)
        let message = answer?["error"]?["message"]?.stringValue ?? ""
        #expect(message.hasPrefix("uid 1000 reached its quota max_queued_bytes_per_uid = 1000"), "\(message)")
        #expect(message.contains("\"Svc\""), "\(message)")
        #expect(d.take(1).isEmpty, "the refused call is not queued to the component")
        #expect(d.broker.inFlight.count == 0)
        #expect(d.broker.quotas.queueEpisodes[1000]?.refusedCalls == 1)
    }

    @Test func atTheQuotaCallsStillRouteAndDrainingReopens() {
        let d = setUp()
        d.queued(1, Self.limit)  // at the quota, not past it
        d.send(#"{"id":1,"target":"Svc","action":"a"}"#, from: 3)
        #expect(d.take(3).isEmpty)
        #expect(d.take(1).count == 1, "routed")
        d.queued(1, Self.limit + 1)
        d.send(#"{"id":2,"target":"Svc","action":"a"}"#, from: 3)
        #expect(errorCode(d.takeOne(3)) == "overloaded")
        #expect(d.take(1).isEmpty)
        // The component reads: the host reports a smaller backlog, calls go through again.
        d.queued(1, 200)
        d.send(#"{"id":3,"target":"Svc","action":"a"}"#, from: 3)
        #expect(d.take(3).isEmpty)
        #expect(d.take(1).count == 1, "routed after draining")
        #expect(d.broker.quotas.queueEpisodes[1000] == nil, "under half the quota, the episode is over")
    }

    @Test func aOnewayCallTowardAUIDPastItsQuotaIsDroppedSilently() {
        let d = setUp()
        d.queued(1, Self.limit + 1)
        d.send(#"{"target":"Svc","action":"a"}"#, from: 3)
        #expect(d.take(3).isEmpty)
        #expect(d.take(1).isEmpty)
    }

    @Test func anotherUIDsComponentsAreStillServed() {
        let d = setUp()
        d.register("Other", from: 3)
        d.queued(1, Self.limit * 3 / 2)
        d.send(#"{"id":1,"target":"Other","action":"a"}"#, from: 2)
        #expect(d.take(2).isEmpty)
        #expect(d.take(3).count == 1, "bob's component gets alice's call")
    }

    @Test func rootIsExempt() {
        let d = BrokerDriver { $0.maxQueuedBytesPerUID = Self.limit }
        d.connect(1, credentials: Self.root)
        d.connect(3, credentials: Self.bob)
        d.register("Svc", from: 1)
        d.subscribe(["tick"], from: 1)
        let effects = d.queued(1, Self.limit * 10)
        #expect(effects.isEmpty, "no disconnection")
        #expect(d.broker.quotas.nothingQueued)
        d.send(#"{"id":1,"target":"Svc","action":"a"}"#, from: 3)
        #expect(d.take(3).isEmpty)
        #expect(d.take(1).count == 1)
        #expect(d.daemon("publish", #"{"event":"tick"}"#, from: 3)?["result"] == #"{"delivered":1}"#.json)
    }

    @Test func eventsToASubscriberPastItsQuotaAreSkipped() {
        let d = setUp()
        d.connect(4, credentials: PeerCredentials(pid: 700, uid: 1002, gid: 1002))
        d.subscribe(["news.*"], from: 2)
        d.subscribe(["news.*"], from: 4)
        d.queued(2, Self.limit + 1)
        #expect(d.daemon("publish", #"{"event":"news.a"}"#, from: 3)?["result"] == #"{"delivered":1}"#.json)
        #expect(d.take(2).isEmpty, "skipped for alice")
        #expect(d.take(4) == [#"{"event":"news.a"}"#])
        #expect(d.broker.quotas.queueEpisodes[1000]?.skippedEvents == 1)
        d.queued(2, 0)
        #expect(d.daemon("publish", #"{"event":"news.b"}"#, from: 3)?["result"] == #"{"delivered":2}"#.json)
        #expect(d.take(2) == [#"{"event":"news.b"}"#])
    }

    @Test func monitorRecordsToAUIDPastItsQuotaAreSkipped() {
        let d = setUp()
        #expect(d.daemon("monitor", from: 2)?["result"] == .object([:]))
        d.register("Other", from: 3)
        d.send(#"{"target":"Other","action":"a"}"#, from: 3)
        #expect(d.take(2).count == 1, "a record while under the quota")
        d.queued(2, Self.limit + 1)
        d.send(#"{"target":"Other","action":"a"}"#, from: 3)
        #expect(d.take(2).isEmpty)
    }

    @Test func pastTwiceTheQuotaTheConnectionThatReadsLeastIsClosed() {
        let d = setUp()
        d.queued(2, 400)
        #expect(d.queued(1, Self.limit * 2 - 400).isEmpty, "at twice the quota, nothing is closed")
        let effects = d.queued(2, 401)
        #expect(d.closed == [1], "connection 1 holds the largest backlog")
        #expect(effects.count == 1)
        #expect(d.broker.usage(.queuedBytes, uid: 1000) == 401, "its backlog is dropped with it")
        // The host closes it; the late report of its figure changes nothing.
        #expect(d.queued(1, 0).isEmpty)
        d.disconnect(1)
        #expect(d.broker.usage(.queuedBytes, uid: 1000) == 401)
    }

    @Test func aQuotaNearIntMaxHasNoOverflow() {
        let d = BrokerDriver { $0.maxQueuedBytesPerUID = Int.max - 1 }
        d.connect(1, credentials: Self.alice)
        #expect(d.queued(1, Int.max).isEmpty)
        #expect(d.broker.quotas.isOverQueueQuota(1000, limit: d.broker.configuration.maxQueuedBytesPerUID))
    }

    @Test func theConfigMemberAndItsDefault() throws {
        #expect(DaemonConfiguration().maxQueuedBytesPerUID == 64 << 20)
        #expect(DaemonConfiguration.keys.contains("max_queued_bytes_per_uid"))
        var configuration = DaemonConfiguration()
        try configuration.apply(json: #"{"max_queued_bytes_per_uid": 4096}"#.json)
        #expect(configuration.maxQueuedBytesPerUID == 4096)
        #expect(throws: MediatorError.self) { try configuration.apply(json: #"{"max_queued_bytes_per_uid": 0}"#.json) }
        #expect(configuration.maxQueuedBytesPerUID == 4096)
    }
}

extension BrokerDriver {
    /// What the host does after measuring a connection's backlog.
    @discardableResult
    func queued(_ connection: ConnectionID, _ bytes: Int) -> [BrokerEffect] {
        apply(broker.queued(connection, bytes: bytes))
    }
}
