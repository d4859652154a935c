import MediatorProtocol

/// The host's part of a re-exec's hand-over: what the successor needs
/// beside the broker's snapshot and the sockets to carry on as the old
/// image would have.
struct HostHandOverState: Equatable {
    /// A `mediator/reexec` call to answer once the new image serves: its
    /// connection and the caller's id, as the JSON it arrived as (nil: oneway).
    struct Requester: Equatable {
        var connection: ConnectionID
        var idBytes: [UInt8]?
    }

    /// The socket file the daemon bound itself (removed at its final stop);
    /// nil for a socket from systemd.
    var boundPath: String?
    /// The path components are told to connect to (`MEDIATOR_SOCKET`).
    var advertisedPath: String
    var requesters: [Requester]
    var descriptors: DescriptorTable.HandOver
    /// Re-execs since the daemon started, this one included.
    var reexecs: Int
    /// Component processes the daemon started, with their output pipes.
    var processes: [ComponentProcesses.HandOver] = []

    /// Descriptors the processes' part keeps open across the exec.
    var processDescriptors: [Int32] { processes.flatMap { [$0.stdout, $0.stderr].compactMap { $0 } } }

    var json: JSONValue {
        var members: [String: JSONValue] = [
            "advertised_path": .string(advertisedPath),
            "requesters": .array(requesters.map { requester in
                var members: [String: JSONValue] = ["connection": .count(requester.connection)]
                if let idBytes = requester.idBytes { members["id"] = .string(String(decoding: idBytes, as: UTF8.self)) }
                return .object(members)
            }),
            "descriptors": .object([
                "received": .count(descriptors.received), "released": .count(descriptors.released),
                "queued": .array(descriptors.queuedToward.sorted { $0.key < $1.key }.map { connection, batches in
                    .object([
                        "connection": .count(connection),
                        "batches": .array(batches.map { .object(["uid": .count($0.uid), "count": .count($0.count)]) }),
                    ])
                }),
            ]),
            "reexecs": .count(reexecs),
            "processes": .array(processes.map { process in
                var members: [String: JSONValue] = [
                    "spawn_id": .count(process.spawnID), "target": .string(process.target), "pid": .count(process.pid),
                ]
                if let fd = process.stdout { members["stdout_fd"] = .count(fd) }
                if let fd = process.stderr { members["stderr_fd"] = .count(fd) }
                return .object(members)
            }),
        ]
        if let boundPath { members["bound_path"] = .string(boundPath) }
        return .object(members)
    }

    init(
        boundPath: String?, advertisedPath: String, requesters: [Requester], descriptors: DescriptorTable.HandOver,
        reexecs: Int, processes: [ComponentProcesses.HandOver]
    ) {
        self.boundPath = boundPath
        self.advertisedPath = advertisedPath
        self.requesters = requesters
        self.descriptors = descriptors
        self.reexecs = reexecs
        self.processes = processes
    }

    init(json members: SnapshotMembers) throws(SnapshotError) {
        boundPath = try members.optionalString("bound_path")
        advertisedPath = try members.string("advertised_path")
        requesters = []
        for requester in try members.objects("requesters") {
            requesters.append(Requester(
                connection: try requester.integer("connection"), idBytes: try requester.optionalString("id").map { Array($0.utf8) }))
        }
        let counts = try members.object("descriptors")
        var queued: [ConnectionID: [(uid: UInt32, count: Int)]] = [:]
        for entry in try counts.objects("queued") {
            var batches: [(uid: UInt32, count: Int)] = []
            for batch in try entry.objects("batches") { batches.append((try batch.integer("uid"), try batch.integer("count"))) }
            queued[try entry.integer("connection")] = batches
        }
        descriptors = DescriptorTable.HandOver(
            received: try counts.integer("received"), released: try counts.integer("released"), queuedToward: queued)
        reexecs = try members.integer("reexecs")
        for process in try members.objects("processes") {
            func fd(_ key: String) throws(SnapshotError) -> Int32? { process.members[key] == nil ? nil : try process.integer(key) }
            processes.append(ComponentProcesses.HandOver(
                spawnID: try process.integer("spawn_id"), target: try process.string("target"), pid: try process.integer("pid"),
                stdout: try fd("stdout_fd"), stderr: try fd("stderr_fd")))
        }
    }

    static func == (lhs: HostHandOverState, rhs: HostHandOverState) -> Bool {
        lhs.json == rhs.json
    }
}
