import MediatorProtocol

/// Who made a call, as the daemon reports it from the socket's peer
/// credentials (contract section 4): a peer cannot forge it.
public struct Caller: Sendable, Hashable, Codable {
    /// The calling process's id, as the kernel reported it for the socket.
    public var pid: Int32
    /// The calling process's user id (the policy's `uid`, docs/policy.md).
    public var uid: UInt32
    /// The calling process's group id.
    public var gid: UInt32
    /// The name the caller gave in `hello`; nil without one.
    public var name: String?
    /// Set when the call came from another host through the NATS bridge:
    /// then `pid`, `uid` and `gid` are the bridge's (mediatord's), and this
    /// says who called there, as that host reported it: information, not a
    /// credential (docs/scale-out.md).
    public var remote: Remote?

    /// Who called on another host.
    public typealias Remote = RemoteCaller

    /// A caller with the given credentials: for tests of handlers, which
    /// otherwise get theirs from the daemon.
    public init(pid: Int32, uid: UInt32, gid: UInt32, name: String? = nil, remote: Remote? = nil) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.name = name
        self.remote = remote
    }

    /// Reads a request's `caller` member; nil when it is not an object with
    /// integral `pid`, `uid` and `gid` in range.
    public init?(json: JSONValue) {
        guard let pid = json["pid"]?.intValue, let pid32 = Int32(exactly: pid),
            let uid = json["uid"]?.intValue, let uid32 = UInt32(exactly: uid),
            let gid = json["gid"]?.intValue, let gid32 = UInt32(exactly: gid)
        else { return nil }
        self.init(pid: pid32, uid: uid32, gid: gid32, name: json["name"]?.stringValue, remote: json["remote"].flatMap { try? RemoteCaller(json: $0) })
    }

    /// Reads a `caller` member from its JSON bytes, member by member (a
    /// request carries one; a dictionary for it costs more than the call's
    /// routing). Same outcome as ``init(json:)`` on the parsed value.
    init?(jsonBytes: UnsafeRawBufferPointer) {
        var pid: Int64?, uid: Int64?, gid: Int64?, name: String?, remote: Remote?
        do {
            try JSONParser.forEachMember(jsonBytes) { key, value in
                switch key {
                case "pid": pid = value.intValue
                case "uid": uid = value.intValue
                case "gid": gid = value.intValue
                case "name": name = value.stringValue
                case "remote": remote = try? RemoteCaller(json: value)
                default: break
                }
            }
        } catch {
            return nil
        }
        guard let pid, let pid32 = Int32(exactly: pid), let uid, let uid32 = UInt32(exactly: uid),
            let gid, let gid32 = UInt32(exactly: gid)
        else { return nil }
        self.init(pid: pid32, uid: uid32, gid: gid32, name: name, remote: remote)
    }

    /// The `caller` member's value.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["pid": .int(Int64(pid)), "uid": .int(Int64(uid)), "gid": .int(Int64(gid))]
        if let name { members["name"] = .string(name) }
        if let remote { members["remote"] = remote.json }
        return .object(members)
    }
}
