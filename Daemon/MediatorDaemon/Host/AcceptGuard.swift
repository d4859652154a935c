import Logging
import MediatorProtocol
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Keeps the listener sane when accepting fails for want of file
/// descriptors or memory (issue 10, defect 8).
///
/// A failing `accept4` on a level-triggered listener would be retried at
/// once, at full CPU, while the peer hangs in the backlog. So on such an
/// error ``LineServer`` asks this guard, which:
/// - for EMFILE or ENFILE, uses the ``ReserveDescriptor`` to accept the
///   waiting peers itself, sends each one `overloaded` line and closes it;
/// - answers how long to stop accepting: a pause that grows with each
///   failure (``AcceptBackoff``);
/// - logs a warning when an episode begins and a notice when a connection is
///   accepted again, not a line per peer.
///
/// The broker knows nothing of it. Confined to the loop's thread.
final class AcceptGuard {
    /// Peers refused per failed accept, at most: bounds the time one
    /// refusal round takes from the loop.
    static let maximumRefusalsPerFailure = 64

    private let listener: Int32
    private let logger: Logger
    private let openConnections: () -> Int
    private var backoff = AcceptBackoff()
    private let reserve = ReserveDescriptor()

    /// - Parameters:
    ///   - listener: the listening socket's descriptor (owned elsewhere).
    ///   - openConnections: the connections open now, for the log.
    init(listener: Int32, logger: Logger, openConnections: @escaping () -> Int) {
        self.listener = listener
        self.logger = logger
        self.openConnections = openConnections
        if !reserve.isHeld {
            logger.warning("cannot hold a reserve file descriptor", metadata: ["error": "\(Self.errnoName(errno))"])
        }
    }

    /// A connection was accepted: ends an episode, if one was under way.
    func accepted() {
        guard let recovery = backoff.accepted(now: .now()) else { return }
        reserve.restore()
        logger.notice(
            "accepting connections again",
            metadata: [
                "refused": "\(recovery.refused)", "failed_accepts": "\(recovery.failures)",
                "duration_ms": "\(recovery.duration.nanoseconds / 1_000_000)",
            ])
    }

    /// `accept` failed with `code`: how long to stop accepting, or nil for
    /// an error that is the peer's (ECONNABORTED and the like: the next one is tried).
    func failed(errno code: Int32) -> Duration? {
        guard let shortage = AcceptBackoff.Shortage(errno: code) else { return nil }
        let failure = backoff.acceptFailed(errno: code, now: .now())
        let limit = Self.openFileLimit()
        var refused = 0
        if shortage == .fileDescriptors {
            let line = OutboundMessage.error(id: nil, MediatorError(
                .overloaded, "mediatord is out of file descriptors (limit \(limit.map { "\($0)" } ?? "unknown")); try again later"))
            refused = reserve.refuseWaiting(on: listener, line: line, maximum: Self.maximumRefusalsPerFailure)
            backoff.refused(refused)
        }
        if failure.beginsEpisode {
            let message: Logger.Message =
                shortage == .fileDescriptors
                ? "out of file descriptors: new connections are answered overloaded and closed until some are free"
                : "out of memory accepting connections: accepting pauses until it works again"
            logger.warning(
                message,
                metadata: [
                    "errno": "\(Self.errnoName(code))", "limit": "\(limit.map { "\($0)" } ?? "unknown")",
                    "connections": "\(openConnections())", "refused": "\(refused)",
                    "reserve": "\(reserve.isHeld ? "held" : "unavailable")",
                ])
        }
        return .nanoseconds(failure.pause.nanoseconds)
    }

    static func openFileLimit() -> UInt64? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        return UInt64(limit.rlim_cur)
    }

    static func errnoName(_ code: Int32) -> String {
        switch code {
        case EMFILE: return "EMFILE"
        case ENFILE: return "ENFILE"
        case ENOBUFS: return "ENOBUFS"
        case ENOMEM: return "ENOMEM"
        default: return "\(code) (\(String(cString: strerror(code))))"
        }
    }
}
