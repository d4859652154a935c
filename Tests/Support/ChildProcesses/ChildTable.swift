import Glibc

/// The pids of live children, in a fixed table that a signal handler can
/// walk, and the handlers that kill them all when the parent is told to end.
/// Everything a handler reads is set up before the handler is installed.
public enum ChildTable {
    /// Slots when the tool asks for no other number.
    public static let defaultSlots = 64

    nonisolated(unsafe) private static var pids = UnsafeMutableBufferPointer<pid_t>(start: nil, count: 0)
    /// Files that a handler removes (the sockets, then the work directory), as C strings.
    nonisolated(unsafe) private static var cleanupPaths: [UnsafeMutablePointer<CChar>] = []
    nonisolated(unsafe) private static var interruptedMessage: StaticString?
    nonisolated(unsafe) private static var watchdogMessage: StaticString?

    /// Makes room for `slots` pids, keeping those already there. The old
    /// table is not freed: a handler may be walking it.
    private static func reserve(_ slots: Int) {
        guard pids.count < slots else { return }
        let grown = UnsafeMutableBufferPointer<pid_t>.allocate(capacity: slots)
        grown.initialize(repeating: 0)
        for (index, pid) in pids.enumerated() { grown[index] = pid }
        pids = grown
    }

    static func add(_ pid: pid_t) {
        reserve(defaultSlots)
        for i in pids.indices where pids[i] == 0 { pids[i] = pid; return }
    }

    static func remove(_ pid: pid_t) {
        for i in pids.indices where pids[i] == pid { pids[i] = 0 }
    }

    /// SIGKILL to every child still in the table.
    public static func killAll() {
        for i in pids.indices where pids[i] > 0 { kill(pids[i], SIGKILL) }
    }

    /// Paths that a handler removes after killing the children, in order:
    /// files (unlink) and then empty directories (rmdir).
    public static func removeOnSignal(_ paths: [String]) {
        cleanupPaths = paths.compactMap { strdup($0) }
    }

    /// On SIGINT, SIGTERM and SIGHUP: writes `interruptedMessage` (if any) on
    /// stderr, kills every child, removes the `removeOnSignal` paths and
    /// exits 128 + the signal. With a `watchdogMessage`, SIGALRM (the tool's
    /// overall bound, set with `alarm`) does the same but writes that message
    /// and exits 1. `slots` bounds how many children can be live at once.
    public static func installSignalHandlers(
        slots: Int = defaultSlots, interruptedMessage: StaticString? = nil, watchdogMessage: StaticString? = nil
    ) {
        reserve(slots)  // allocate outside the handler
        self.interruptedMessage = interruptedMessage
        self.watchdogMessage = watchdogMessage
        _ = cleanupPaths
        for sig in [SIGINT, SIGTERM, SIGHUP] + (watchdogMessage == nil ? [] : [SIGALRM]) {
            signal(sig) { received in
                let isWatchdog = received == SIGALRM
                if let message = isWatchdog ? ChildTable.watchdogMessage : ChildTable.interruptedMessage {
                    _ = write(STDERR_FILENO, message.utf8Start, message.utf8CodeUnitCount)
                }
                ChildTable.killAll()
                for path in ChildTable.cleanupPaths { unlink(path); rmdir(path) }
                _exit(isWatchdog ? 1 : 128 + received)
            }
        }
    }
}
