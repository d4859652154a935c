import MediatorProtocol

/// One connection's peer in a ``BrokerSnapshot``: who it is and what it
/// asked for. Its `caller` member is rebuilt from these on restore.
struct PeerSnapshot: Equatable, Sendable {
    var connection: ConnectionID
    var credentials: PeerCredentials
    var name: String?
    var targets: Set<String>
    var registeredBytes: [String: Int]
    /// Its subscriptions' patterns.
    var patterns: Set<String>
    var consecutiveBadFrames: Int
    var askedForDescriptors: Bool
    var passesDescriptors: Bool
}

extension PeerSnapshot {
    var json: JSONValue {
        var members: [String: JSONValue] = [
            "connection": .count(connection), "credentials": credentials.snapshotJSON, "targets": .names(targets),
            "registered_bytes": .counts(registeredBytes), "patterns": .names(patterns),
            "consecutive_bad_frames": .count(consecutiveBadFrames), "asked_for_fds": .bool(askedForDescriptors),
            "passes_fds": .bool(passesDescriptors),
        ]
        if let name { members["name"] = .string(name) }
        return .object(members)
    }

    init(snapshot members: SnapshotMembers) throws(SnapshotError) {
        self.init(
            connection: try members.integer("connection"),
            credentials: try PeerCredentials(snapshot: members.object("credentials")),
            name: try members.optionalString("name"), targets: Set(try members.strings("targets")),
            registeredBytes: try members.counts("registered_bytes"), patterns: Set(try members.strings("patterns")),
            consecutiveBadFrames: try members.integer("consecutive_bad_frames"),
            askedForDescriptors: try members.bool("asked_for_fds"), passesDescriptors: try members.bool("passes_fds"))
    }
}
