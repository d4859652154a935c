import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The soft limit on open files (RLIMIT_NOFILE), raised to the hard limit at
/// start as dbus-broker and most servers do: every connection is a file, and
/// the usual soft limit of 1024 would refuse connections long before
/// `max_connections` (default 4096). The hard limit is the administrator's
/// (`LimitNOFILE=` in the unit), so it is left alone.
enum OpenFileLimit {
    struct Limits: Equatable {
        var soft: UInt64
        var hard: UInt64
    }

    /// The limits now, nil if they cannot be read.
    static func current() -> Limits? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        return Limits(soft: UInt64(limit.rlim_cur), hard: UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard one and logs the outcome, with a
    /// warning when the limit is still too low for `maxConnections` (the
    /// daemon also needs a few files of its own: the listener, the event
    /// loop's, logs, component pipes).
    @discardableResult
    static func raise(forConnections maxConnections: Int, logger: Logger) -> Limits? {
        guard let before = current() else {
            logger.warning("cannot read the open file limit", metadata: ["errno": "\(errno)"])
            return nil
        }
        var after = before
        if before.soft < before.hard {
            var limit = rlimit(rlim_cur: rlim_t(before.hard), rlim_max: rlim_t(before.hard))
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 {
                after.soft = before.hard
            } else {
                // RLIM_INFINITY as the hard limit is refused for NOFILE (above
                // fs.nr_open); keep what we have.
                logger.warning(
                    "cannot raise the open file limit",
                    metadata: ["soft": "\(before.soft)", "hard": "\(before.hard)", "error": "\(String(cString: strerror(errno)))"])
            }
        }
        logger.info(
            "open file limit", metadata: ["soft": "\(after.soft)", "hard": "\(after.hard)", "was": "\(before.soft)"])
        let needed = UInt64(max(maxConnections, 0)) + reserve
        if after.soft < needed {
            logger.warning(
                "the open file limit is below max_connections: connections will be refused before it",
                metadata: ["limit": "\(after.soft)", "max_connections": "\(maxConnections)"])
        }
        return after
    }

    /// Files the daemon keeps besides connections.
    static let reserve: UInt64 = 64
}
