/// `hello`'s members about descriptors (contract section 8): a peer says
/// `"fds": true` in its params to send or accept them, and the daemon's
/// result then has `"max_fds"`, the most it takes with one message.
///
/// The daemon builds and reads `hello` itself, and the libraries theirs;
/// this is what both share: the names, the bounds, and how each side reads
/// the other's member.
public enum HelloFileDescriptors {
    /// In `hello`'s params: `true` when the peer sends or accepts descriptors.
    public static let paramsMember = "fds"
    /// In `hello`'s result, when the peer said `"fds": true`.
    public static let resultMember = "max_fds"
    /// What a daemon may announce as `max_fds`: at least
    /// ``ProtocolConstants/minimumMaxFds``, at most what one message can carry.
    public static let maxFdsRange = ProtocolConstants.minimumMaxFds...ProtocolConstants.maxFdsPerMessageLimit

    /// The daemon's reading of `hello`'s params: whether the peer said
    /// `"fds": true`; false without the member. Any value but a boolean is
    /// `bad_request`.
    public static func accepts(params: [String: JSONValue]) throws(MediatorError) -> Bool {
        guard let value = params[paramsMember] else { return false }
        guard let flag = value.boolValue else {
            throw MediatorError(.badRequest, "\"\(paramsMember)\" must be a boolean, got \(value.typeName)")
        }
        return flag
    }

    /// A library's reading of `hello`'s result: the daemon's `max_fds`, or
    /// nil when it has none (a daemon that passes no descriptors, or a peer
    /// that did not ask) or one outside ``maxFdsRange``, which the contract
    /// does not allow: either way the peer sends no descriptors.
    public static func maxFds(result: JSONValue) -> Int? {
        guard let value = result[resultMember]?.intValue.flatMap({ Int(exactly: $0) }), maxFdsRange.contains(value) else {
            return nil
        }
        return value
    }
}
