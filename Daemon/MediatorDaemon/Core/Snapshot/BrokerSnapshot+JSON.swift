import MediatorProtocol

// The snapshot's encoding: one JSON object, `kind` and `version` first read,
// then the parts. Written with the protocol's own JSONValue encoder (sorted
// members, so equal states encode to equal bytes); no Foundation.
extension BrokerSnapshot {
    var json: JSONValue { json(version: Self.currentVersion) }

    /// `version` is for tests of a successor that cannot read its
    /// predecessor's snapshot (another version): always the current one otherwise.
    func json(version: Int64) -> JSONValue {
        .object([
            "kind": .string(Self.kind), "version": .int(version),
            "uptime_ns": .int(uptimeNanoseconds),
            "peers": .array(peers.map(\.json)),
            "targets": .array(targets.map(\.json)), "next_instance": .count(nextInstance),
            "calls": .array(calls.map(\.json)), "next_call_id": .int(nextCallID),
            "monitors": .array(monitors.sorted { $0.key < $1.key }.map { connection, filter in
                .object(["connection": .count(connection), "targets": .array(filter.targets.map(JSONValue.string)),
                         "events": .array(filter.events.map(JSONValue.string))])
            }),
            "queue_episodes": .array(queueEpisodes.sorted { $0.key < $1.key }.map { uid, episode in
                .object(["uid": .count(uid), "refused_calls": .count(episode.refusedCalls),
                         "skipped_events": .count(episode.skippedEvents)])
            }),
            "statistics": statistics.json,
            "activation": activation.json,
            "left_out": .object(["held_calls": .count(leftOut.heldCalls)]),
        ])
    }

    /// The bytes a successor reads with ``decode(_:limit:)``.
    func encoded(version: Int64 = currentVersion) -> [UInt8] { json(version: version).encoded }

    /// Reads a snapshot; refuses one over `limit` bytes, one that is not a
    /// broker snapshot, and one of a version it cannot read before reading further.
    static func decode(_ bytes: [UInt8], limit: Int = maxEncodedBytes) throws(SnapshotError) -> BrokerSnapshot {
        guard bytes.count <= limit else { throw .tooLarge(bytes: bytes.count, limit: limit) }
        let value: JSONValue
        do {
            // Action specs sit four levels down, as in the `register` they came in.
            value = try JSONParser.parse(bytes, maxDepth: JSONParser.defaultMaxDepth + 8)
        } catch {
            throw .notJSON("\(error)")
        }
        guard value.objectValue?["kind"] == .string(kind) else { throw .notASnapshot }
        let members = try SnapshotMembers(value, path: "snapshot")
        let version: Int64 = try members.integer("version")
        guard readableVersions.contains(version) else { throw .unsupportedVersion(version) }
        return try BrokerSnapshot(snapshot: members, version: version)
    }

    private init(snapshot members: SnapshotMembers, version: Int64) throws(SnapshotError) {
        var peers: [PeerSnapshot] = []
        for peer in try members.objects("peers") { peers.append(try PeerSnapshot(snapshot: peer)) }
        var targets: [TargetSnapshot] = []
        for target in try members.objects("targets") { targets.append(try TargetSnapshot(snapshot: target)) }
        var calls: [CallSnapshot] = []
        for call in try members.objects("calls") { calls.append(try CallSnapshot(snapshot: call)) }
        var monitors: [ConnectionID: Monitors.Filter] = [:]
        for monitor in try members.objects("monitors") {
            monitors[try monitor.integer("connection")] = Monitors.Filter(
                targets: try monitor.strings("targets"), events: try monitor.strings("events"))
        }
        var episodes: [UInt32: QuotaLedger.QueueEpisode] = [:]
        for episode in try members.objects("queue_episodes") {
            episodes[try episode.integer("uid")] = QuotaLedger.QueueEpisode(
                refusedCalls: try episode.integer("refused_calls"), skippedEvents: try episode.integer("skipped_events"))
        }
        let leftOut = try members.object("left_out")
        self.init(
            uptimeNanoseconds: try members.integer("uptime_ns"), peers: peers, targets: targets,
            nextInstance: try members.integer("next_instance"), calls: calls, nextCallID: try members.integer("next_call_id"),
            monitors: monitors, queueEpisodes: episodes, statistics: try StatisticsSummary(snapshot: members.object("statistics")),
            activation: try ActivationSnapshot(snapshot: members.object("activation"), version: version),
            leftOut: LeftOut(heldCalls: try leftOut.integer("held_calls")))
    }
}
