import Logging
import MediatorConfiguration
import NIOCore
import MediatorProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Access checks against the policy (Policy.swift): register, call (and
/// `open`, as the call it reaches), sending descriptors with a call,
/// subscribe, publish, monitor. A denial
/// answers `forbidden` naming what was denied, and is logged with the
/// peer's pid, uid and executable.
extension Broker {
    /// Installs a policy (at start and on SIGHUP).
    package func loadPolicy(_ policy: Policy) {
        self.policy = policy
        logger.info("access policy loaded", metadata: ["rules": "\(policy.rules.count)", "default": "\(policy.isDefault)"])
    }

    /// nil when allowed, else the `forbidden` error naming what was denied.
    func checkPolicy(_ request: PolicyRequest, _ credentials: PeerCredentials) -> MediatorError? {
        // uid 0 may do anything (Policy.allows): no subject to build on every call.
        if credentials.uid == 0 { return nil }
        let subject = PolicySubject(
            uid: credentials.uid, gid: credentials.gid, groups: credentials.groups, userName: credentials.userName)
        guard let denial = policy.check(request, by: subject) else { return nil }
        statistics.policyDenied(uid: credentials.uid)
        logger.notice(
            "access denied",
            metadata: [
                "denied": "\(request)", "pid": "\(credentials.pid)", "uid": "\(credentials.uid)",
                "exe": "\(credentials.executable ?? "unknown")",
            ])
        return MediatorError(.forbidden, denial)
    }

    /// Whether `credentials` have the `monitor` grant; neither counted nor
    /// logged as a denial (the metrics endpoint asks at every scrape, to
    /// decide what to show, not to refuse).
    func grantsMonitor(_ credentials: PeerCredentials) -> Bool {
        if credentials.uid == 0 { return true }
        let subject = PolicySubject(
            uid: credentials.uid, gid: credentials.gid, groups: credentials.groups, userName: credentials.userName)
        return policy.check(.monitor, by: subject) == nil
    }

    /// The policy's verdict on a caller on another host (its remote rules).
    func checkPolicy(_ request: PolicyRequest, remote: RemoteCaller) -> MediatorError? {
        guard let denial = policy.check(request, by: .remote(host: remote.host, uid: remote.uid)) else { return nil }
        logger.notice(
            "access denied",
            metadata: ["denied": "\(request)", "host": "\(remote.host)", "uid": "\(remote.uid)", "pid": "\(remote.pid)"])
        return MediatorError(.forbidden, denial)
    }

    /// The `remote_caller` of a request: honoured from this daemon's own
    /// process (its NATS bridge) only; anyone else sending it gets `forbidden`.
    func remoteCaller(_ range: Range<Int>, in frame: ByteBuffer, from connection: ConnectionID) -> Result<RemoteCaller, MediatorError> {
        guard credentials(of: connection)?.pid == ownProcessID else {
            return .failure(MediatorError(.forbidden, "only mediatord's own NATS bridge may say who called on another host"))
        }
        let bytes = slice(frame, range)
        guard let value = try? JSONParser.parse(bytes.readableBytesView) else {
            return .failure(MediatorError(.badRequest, "\"remote_caller\" is not JSON"))
        }
        do { return .success(try RemoteCaller(json: value)) } catch { return .failure(error) }
    }
}
