import Logging
import MediatorProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Access checks against the policy (Policy.swift): register, call (and
/// `open`, as the call it reaches), subscribe, publish, monitor. A denial
/// answers `forbidden` naming what was denied, and is logged with the
/// peer's pid, uid and executable.
extension Broker {
    /// Installs a policy (at start and on SIGHUP).
    public func loadPolicy(_ policy: Policy) {
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
}
