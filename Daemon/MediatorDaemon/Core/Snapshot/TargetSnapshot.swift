import MediatorConfiguration
import MediatorProtocol

/// One registered target in a ``BrokerSnapshot``: its specs as registered,
/// its instances (with their connection and calls in flight) and where its
/// round robin goes next.
struct TargetSnapshot: Equatable, Sendable {
    var name: String
    var description: String?
    var mode: TargetMode
    /// In registration order.
    var actions: [ActionSpec]
    var instances: [Registry.Instance]
    var nextTurn: Int
}

extension TargetSnapshot {
    var json: JSONValue {
        var members: [String: JSONValue] = [
            "name": .string(name), "mode": .string(mode.rawValue), "actions": .array(actions.map(\.json)),
            "instances": .array(instances.map(Self.json)), "next_turn": .count(nextTurn),
        ]
        if let description { members["description"] = .string(description) }
        return .object(members)
    }

    init(snapshot members: SnapshotMembers) throws(SnapshotError) {
        let modeName = try members.string("mode")
        guard let mode = TargetMode(rawValue: modeName) else {
            throw .malformed(path: members.at("mode"), expected: "exclusive or pool")
        }
        var actions: [ActionSpec] = []
        for item in try members.items("actions") {
            do {
                actions.append(try ActionSpec(json: item.value))
            } catch {
                throw .malformed(path: item.path, expected: "an action spec (\(error.message))")
            }
        }
        var instances: [Registry.Instance] = []
        for instance in try members.objects("instances") { instances.append(try Self.instance(instance)) }
        self.init(
            name: try members.string("name"), description: try members.optionalString("description"), mode: mode,
            actions: actions, instances: instances, nextTurn: try members.integer("next_turn"))
    }

    private static func json(_ instance: Registry.Instance) -> JSONValue {
        var members: [String: JSONValue] = [
            "instance": .count(instance.instance), "connection": .count(instance.connection),
            "credentials": instance.credentials.snapshotJSON, "in_flight": .count(instance.inFlight),
        ]
        if let name = instance.name { members["name"] = .string(name) }
        if let remoteHost = instance.remoteHost { members["remote_host"] = .string(remoteHost) }
        return .object(members)
    }

    private static func instance(_ members: SnapshotMembers) throws(SnapshotError) -> Registry.Instance {
        Registry.Instance(
            instance: try members.integer("instance"), connection: try members.integer("connection"),
            credentials: try PeerCredentials(snapshot: members.object("credentials")), name: try members.optionalString("name"),
            inFlight: try members.integer("in_flight"), remoteHost: try members.optionalString("remote_host"))
    }
}
