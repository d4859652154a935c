import MediatorConfiguration
import MediatorProtocol
import MediatorStatistics
import NIOCore
import Testing

@testable import MediatorDaemon

/// The snapshot's encoding (issue 28, first part): every field survives it,
/// and a reader refuses what it cannot trust with a typed error.
@Suite struct BrokerSnapshotEncodingTests {
    /// The scenario's snapshot with every optional member set and every
    /// table that the scenario leaves empty filled.
    static func fullSnapshot() -> BrokerSnapshot {
        let original = SnapshotScenario.richBroker()
        var snapshot = original.broker.snapshot(now: original.now)
        snapshot.peers[0].credentials.groups = [10, 27]
        snapshot.peers[0].credentials.executable = "/usr/bin/caller \"quoted\""
        snapshot.peers[0].credentials.userName = "zoë"
        snapshot.peers[0].consecutiveBadFrames = 2
        snapshot.peers[0].askedForDescriptors = true
        snapshot.peers[0].passesDescriptors = true
        snapshot.targets[0].instances[0].remoteHost = "other-host"
        snapshot.queueEpisodes = [1001: QuotaLedger.QueueEpisode(refusedCalls: 3, skippedEvents: 4)]
        snapshot.statistics.uids[1001] = UIDCounters(
            connectionsOpened: 9, quotaRefusals: ["max_calls_in_flight_per_uid": 2], policyDenials: 1)
        snapshot.statistics.components["Calc"] = ComponentCounters(
            activations: 3, startFailures: [.startTimeout: 1, .exited: 2], restarts: 1, idleExits: 1)
        snapshot.leftOut = BrokerSnapshot.LeftOut(heldCalls: 2)
        snapshot.activation = ActivationSnapshot(
            components: [
                ActivationSnapshot.Component(
                    target: "Calc", state: .running,
                    processes: [
                        .init(spawnID: 4, pid: 4242, ageNanoseconds: 5_000_000_000, registered: true),
                        .init(spawnID: 5, pid: nil, ageNanoseconds: 1_000, registered: false),
                    ],
                    startDeadlineIn: 9_000, restartIn: nil, termIn: -5, lastActivityAgo: 1_000_000, runningSinceAgo: 4_000_000_000,
                    consecutiveRestarts: 1, restarts: 2, lastExit: "exited with status 3", endedBecause: nil, removed: true),
            ],
            nextSpawnID: 6, bootGroups: [["A", "B"], ["C"]], bootWaiting: ["A"], bootDone: false)
        return snapshot
    }

    @Test func everyFieldSurvivesTheEncoding() throws {
        let snapshot = Self.fullSnapshot()
        let bytes = snapshot.encoded()
        let decoded = try BrokerSnapshot.decode(bytes)
        #expect(decoded == snapshot)
        #expect(decoded.encoded() == bytes, "equal states encode to equal bytes")
        // The scenario filled what it is about.
        #expect(snapshot.peers.count == 6 && snapshot.targets.count == 2 && snapshot.calls.count == 4)
        #expect(snapshot.calls.contains { $0.more } && snapshot.monitors.count == 1)
        #expect(snapshot.targets.first { $0.name == "Feed" }?.actions.first?.result != nil)
    }

    @Test func aRestoredBrokerSnapshotsAsTheOriginal() throws {
        let original = SnapshotScenario.richBroker()
        var snapshot = original.broker.snapshot(now: original.now)
        snapshot.queueEpisodes = [1001: QuotaLedger.QueueEpisode(refusedCalls: 3, skippedEvents: 4)]
        snapshot.statistics.uids[1001] = UIDCounters(connectionsOpened: 9, quotaRefusals: ["max_queued_bytes_per_uid": 2], policyDenials: 1)
        let restored = try SnapshotScenario.restored(from: snapshot)
        #expect(restored.broker.snapshot(now: restored.now) == snapshot)
    }

    @Test func anotherVersionIsRefused() throws {
        let text = String(decoding: Self.fullSnapshot().encoded(), as: UTF8.self)
        #expect(text.components(separatedBy: #""version":3"#).count == 2)
        for version in [1, 0, 4, 100] {
            let changed = text.replacingOccurrences(of: #""version":3"#, with: #""version":\#(version)"#)
            #expect(throws: SnapshotError.unsupportedVersion(Int64(version))) { try BrokerSnapshot.decode(Array(changed.utf8)) }
        }
        // Even one whose other members this reader would not understand.
        let newer = #"{"kind":"mediatord-broker-snapshot","version":4,"connections":{}}"#
        #expect(throws: SnapshotError.unsupportedVersion(4)) { try BrokerSnapshot.decode(Array(newer.utf8)) }
        let unversioned = text.replacingOccurrences(of: #","version":3"#, with: "")
        #expect(throws: SnapshotError.malformed(path: "snapshot.version", expected: "a member")) {
            try BrokerSnapshot.decode(Array(unversioned.utf8))
        }
    }

    @Test func whatIsNotASnapshotIsRefused() {
        for text in [#"{"kind":"something-else","version":1}"#, #"{"version":1}"#, "[1,2]", "null"] {
            #expect(throws: SnapshotError.notASnapshot) { try BrokerSnapshot.decode(Array(text.utf8)) }
        }
    }

    @Test func everyTruncationIsRefused() {
        let bytes = Self.fullSnapshot().encoded()
        for length in 0..<bytes.count {
            #expect(throws: SnapshotError.self, "truncated at \(length)") { try BrokerSnapshot.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test func anOversizedSnapshotIsRefusedBeforeItIsRead() throws {
        let bytes = Self.fullSnapshot().encoded()
        #expect(throws: SnapshotError.tooLarge(bytes: bytes.count, limit: bytes.count - 1)) {
            try BrokerSnapshot.decode(bytes, limit: bytes.count - 1)
        }
        #expect(try BrokerSnapshot.decode(bytes, limit: bytes.count) == Self.fullSnapshot())
        // Not even parsed: garbage over the limit is refused for its size.
        #expect(throws: SnapshotError.tooLarge(bytes: 11, limit: 10)) { try BrokerSnapshot.decode(Array("not json!!!".utf8), limit: 10) }
    }

    @Test func aMemberOfTheWrongTypeIsNamed() {
        let text = String(decoding: Self.fullSnapshot().encoded(), as: UTF8.self)
        let cases: [(from: String, to: String, error: SnapshotError)] = [
            (#""next_call_id":"#, #""next_call_id":"x","ignored":"#,
             .malformed(path: "snapshot.next_call_id", expected: "an integer that fits Int64")),
            (#""mode":"pool""#, #""mode":"shared""#, .malformed(path: "snapshot.targets[0].mode", expected: "exclusive or pool")),
            (#""passes_fds":false"#, #""passes_fds":0"#, .malformed(path: "snapshot.peers[1].passes_fds", expected: "true or false")),
        ]
        for change in cases {
            #expect(text.contains(change.from))
            let broken = text.replacingOccurrences(of: change.from, with: change.to)
            #expect(throws: change.error) { try BrokerSnapshot.decode(Array(broken.utf8)) }
        }
    }
}
