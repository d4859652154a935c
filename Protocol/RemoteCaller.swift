/// Who made a call on another host, as that host's NATS bridge reports it:
/// `remote_caller` in a request from a daemon's own bridge, `caller.remote`
/// in the request a component gets. Information for the component and for
/// the policy's remote rules; never a local credential.
public struct RemoteCaller: Sendable, Hashable, Codable {
    /// The host the call came from, as its bridge names itself.
    public var host: String
    /// The caller's user id on that host.
    public var uid: UInt32
    /// The caller's process id on that host.
    public var pid: Int32
    /// The name the caller gave in `hello` there; nil without one.
    public var name: String?

    /// A remote caller as given.
    public init(host: String, uid: UInt32, pid: Int32, name: String? = nil) {
        self.host = host
        self.uid = uid
        self.pid = pid
        self.name = name
    }

    /// Reads the member; the error is the `bad_request` to answer.
    public init(json: JSONValue) throws(MediatorError) {
        guard case .object(let members) = json,
              let host = members["host"]?.stringValue, !host.isEmpty, host.utf8.count <= 256,
              let uid = members["uid"]?.intValue.flatMap({ UInt32(exactly: $0) }),
              let pid = members["pid"]?.intValue.flatMap({ Int32(exactly: $0) })
        else {
            throw MediatorError(.badRequest, "\"remote_caller\" must be {\"host\", \"uid\", \"pid\", \"name\"?}")
        }
        var name: String?
        if let value = members["name"], value != .null {
            guard let text = value.stringValue, text.utf8.count <= 256 else {
                throw MediatorError(.badRequest, "\"remote_caller.name\" must be a string of at most 256 bytes")
            }
            name = text
        }
        self.init(host: host, uid: uid, pid: pid, name: name)
    }

    /// The member as the wire writes it (`name` left out when nil).
    public var json: JSONValue {
        var members: [String: JSONValue] = ["host": .string(host), "uid": .int(Int64(uid)), "pid": .int(Int64(pid))]
        if let name { members["name"] = .string(name) }
        return .object(members)
    }
}
