import Logging
import MediatorProtocol
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Keeps the listener sane when accepting fails for want of file
/// descriptors or memory (issue 10, defect 8).
///
/// Without it the daemon spun: when `accept4` fails with EMFILE, NIO's
/// server channel keeps its read pending and the socket registered for
/// readability, so the level-triggered epoll reports the waiting peer at
/// once and `accept4` fails again, at full CPU. NIO's `AcceptBackoffHandler`
/// (which the bootstrap installs) does not help: it only delays the *next*
/// `read()`, and none is asked for while the failed one is still pending;
/// the bootstrap also tells it not to pass the error on, so nothing is
/// logged. Meanwhile the peer hangs in the backlog.
///
/// So on such an error this handler, first in the server channel's pipeline:
/// - for EMFILE or ENFILE, uses the ``ReserveDescriptor`` to accept the
///   waiting peers itself, sends each one `overloaded` line and closes it;
/// - turns `autoRead` off, which takes the socket out of epoll, and on again
///   after a pause that grows with each failure (``AcceptBackoff``);
/// - logs a warning when an episode begins and a notice when a connection is
///   accepted again, not a line per peer.
///
/// The broker knows nothing of it. Confined to the server channel's loop.
final class AcceptGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    /// Peers refused per failed accept, at most: bounds the time one
    /// refusal round takes from the loop.
    static let maximumRefusalsPerFailure = 64

    private let listener: Int32
    private let logger: Logger
    private let openConnections: () -> Int
    private var backoff = AcceptBackoff()
    private let reserve = ReserveDescriptor()
    private var resumption: Scheduled<Void>?

    /// - Parameters:
    ///   - listener: the listening socket's descriptor (owned by the channel).
    ///   - openConnections: the connections open now, for the log.
    init(listener: Int32, logger: Logger, openConnections: @escaping () -> Int) {
        self.listener = listener
        self.logger = logger
        self.openConnections = openConnections
        if !reserve.isHeld {
            logger.warning("cannot hold a reserve file descriptor", metadata: ["error": "\(Self.errnoName(errno))"])
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let recovery = backoff.accepted(now: .now()) {
            reserve.restore()
            logger.notice(
                "accepting connections again",
                metadata: [
                    "refused": "\(recovery.refused)", "failed_accepts": "\(recovery.failures)",
                    "duration_ms": "\(recovery.duration.nanoseconds / 1_000_000)",
                ])
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let ioError = error as? IOError, let shortage = AcceptBackoff.Shortage(errno: ioError.errnoCode) else {
            context.fireErrorCaught(error)
            return
        }
        let code = ioError.errnoCode
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
        pause(context, for: failure.pause)
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelResumption()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelResumption()
    }

    /// autoRead off takes the listening socket out of epoll (a plain delay
    /// of `read()` would not: the failed read is still pending).
    private func pause(_ context: ChannelHandlerContext, for pause: TimeAmount) {
        guard resumption == nil else { return }
        let channel = context.channel
        do {
            try channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
        } catch {
            return  // closed meanwhile: nothing to accept any more
        }
        resumption = context.eventLoop.assumeIsolated().scheduleTask(in: pause) { [self] in
            resumption = nil
            try? channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
        }
    }

    private func cancelResumption() {
        resumption?.cancel()
        resumption = nil
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
