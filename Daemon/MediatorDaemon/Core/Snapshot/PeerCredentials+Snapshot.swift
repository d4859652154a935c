import MediatorProtocol

// A peer's credentials in a snapshot's encoding, for its peer and for each
// instance it registered.
extension PeerCredentials {
    var snapshotJSON: JSONValue {
        var members: [String: JSONValue] = [
            "pid": .count(pid), "uid": .count(uid), "gid": .count(gid), "groups": .array(groups.map { .count($0) }),
        ]
        if let executable { members["executable"] = .string(executable) }
        if let userName { members["user_name"] = .string(userName) }
        return .object(members)
    }

    init(snapshot members: SnapshotMembers) throws(SnapshotError) {
        self.init(
            pid: try members.integer("pid"), uid: try members.integer("uid"), gid: try members.integer("gid"),
            groups: try members.integers("groups"), executable: try members.optionalString("executable"),
            userName: try members.optionalString("user_name"))
    }
}
