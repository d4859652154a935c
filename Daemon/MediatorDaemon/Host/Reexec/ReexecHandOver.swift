import MediatorProtocol
import MediatorSocket
import MediatorSocketHost

/// What one image of mediatord hands the next one through `execve` (issue
/// 28): the descriptors kept open across the exec, the host's own state,
/// the broker's snapshot and the sockets' hand-over, in one sealed memfd
/// named by `MEDIATORD_HANDOVER_FD`.
///
/// The byte form is a JSON header line, then the two sections it gives
/// the lengths of, raw:
///
///     {"kind":"mediatord-reexec","version":1,"descriptors":[{"fd":5,"role":"listener"},{"fd":7,"role":"connection","connection":3},...],
///      "broker_bytes":N,"sockets_bytes":M,"host":{...}}\n<broker snapshot><sockets hand-over>
///
/// `kind` and `descriptors` keep their form in every version, so that an
/// image that reads no other part still finds the listener and the
/// connections for its clean restart (docs/daemon.md, "Re-exec").
struct ReexecHandOver {
    static let kind = "mediatord-reexec"
    /// Raised whenever the header or the host state gains, loses or changes a member.
    static let currentVersion: Int64 = 1
    /// The environment variable that names the memfd.
    static let environmentVariable = "MEDIATORD_HANDOVER_FD"
    /// Far above the sections' own limits together.
    static let maxEncodedBytes = (1 << 30) + BrokerSnapshot.maxEncodedBytes + (1 << 20)

    /// What a descriptor kept open is.
    enum Role: String {
        case listener
        /// A peer's connection.
        case connection
        /// A descriptor a connection had read or queued, carried with it.
        case carried
    }

    struct Descriptor: Equatable {
        var fd: Int32
        var role: Role
        /// A connection's id (its name in the fd store), for a clean restart that reads nothing else.
        var connection: Int? = nil
    }

    /// In the order of ``LineServerHandOver/descriptors``.
    var descriptors: [Descriptor]
    var host: HostHandOverState
    var broker: [UInt8]
    var sockets: [UInt8]

    /// The roles of `handOver`'s descriptors, in its order.
    static func descriptors(of handOver: LineServerHandOver) -> [Descriptor] {
        var listed: [Descriptor] = []
        func add(_ descriptor: OwnedDescriptor, _ role: Role, connection: Int? = nil) {
            if let fd = descriptor.rawValue { listed.append(Descriptor(fd: fd, role: role, connection: connection)) }
        }
        add(handOver.listener, .listener)
        for connection in handOver.connections {
            add(connection.socket, .connection, connection: connection.id)
            for batch in connection.inbound.batches { for descriptor in batch.descriptors { add(descriptor, .carried) } }
            for write in connection.outbound { for descriptor in write.descriptors { add(descriptor, .carried) } }
        }
        return listed
    }

    func encoded() -> [UInt8] {
        let header: JSONValue = .object([
            "kind": .string(Self.kind), "version": .int(Self.currentVersion),
            "descriptors": .array(descriptors.map { descriptor in
                var members: [String: JSONValue] = ["fd": .count(descriptor.fd), "role": .string(descriptor.role.rawValue)]
                if let connection = descriptor.connection { members["connection"] = .count(connection) }
                return .object(members)
            }),
            "broker_bytes": .count(broker.count), "sockets_bytes": .count(sockets.count),
            "host": host.json,
        ])
        return header.encoded + [UInt8(ascii: "\n")] + broker + sockets
    }

    /// The descriptors of a hand-over whose other parts may not be
    /// readable: enough for a clean restart. Nil when it is not a hand-over.
    static func descriptors(in bytes: [UInt8]) -> [Descriptor]? {
        guard let header = try? parseHeader(bytes), header.members["kind"] == .string(kind),
              let items = try? header.objects("descriptors")
        else { return nil }
        var listed: [Descriptor] = []
        for item in items {
            guard let fd: Int32 = try? item.integer("fd"), let role = (try? item.string("role")).flatMap(Role.init) else {
                return nil
            }
            let connection: Int? = item.members["connection"] == nil ? nil : try? item.integer("connection")
            listed.append(Descriptor(fd: fd, role: role, connection: connection))
        }
        return listed
    }

    static func decode(_ bytes: [UInt8]) throws(ReexecError) -> ReexecHandOver {
        guard bytes.count <= maxEncodedBytes else { throw .handOver("\(bytes.count) bytes, over the limit of \(maxEncodedBytes)") }
        let header = try parseHeader(bytes)
        guard header.members["kind"] == .string(kind) else { throw .handOver("not a mediatord hand-over (kind)") }
        guard let descriptors = descriptors(in: bytes) else { throw .handOver("its descriptors cannot be read") }
        do {
            let version: Int64 = try header.integer("version")
            guard version == currentVersion else { throw ReexecError.unsupportedVersion(version) }
            let brokerBytes: Int = try header.integer("broker_bytes")
            let socketsBytes: Int = try header.integer("sockets_bytes")
            let start = (bytes.firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count) + 1
            guard brokerBytes >= 0, socketsBytes >= 0, bytes.count - start == brokerBytes + socketsBytes else {
                throw ReexecError.handOver("the sections' lengths do not match the \(bytes.count - start) bytes after the header")
            }
            return ReexecHandOver(
                descriptors: descriptors, host: try HostHandOverState(json: header.object("host")),
                broker: Array(bytes[start..<(start + brokerBytes)]),
                sockets: Array(bytes[(start + brokerBytes)...]))
        } catch let error as ReexecError {
            throw error
        } catch let error as SnapshotError {
            throw .handOver("\(error)")
        } catch {
            throw .handOver("\(error)")
        }
    }

    private static func parseHeader(_ bytes: [UInt8]) throws(ReexecError) -> SnapshotMembers {
        guard let end = bytes.firstIndex(of: UInt8(ascii: "\n")) else { throw .handOver("no header line") }
        do {
            return try SnapshotMembers(try JSONParser.parse(bytes[..<end], maxDepth: JSONParser.defaultMaxDepth + 8), path: "handover")
        } catch {
            throw .handOver("the header is not JSON: \(error)")
        }
    }
}
