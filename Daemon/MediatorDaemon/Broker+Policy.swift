import MediatorProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Access checks. Until the policy files are wired in, only root and the
/// daemon's own user may monitor; everything else is allowed.
extension Broker {
    enum Access {
        case monitor
    }

    /// nil when allowed, else the `forbidden` error naming what was denied.
    func checkPolicy(_ access: Access, _ credentials: PeerCredentials) -> MediatorError? {
        switch access {
        case .monitor:
            if credentials.uid == 0 || credentials.uid == getuid() { return nil }
            return MediatorError(.forbidden, "uid \(credentials.uid) may not monitor")
        }
    }
}
