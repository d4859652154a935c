import CSystemd
import Glibc
import Synchronization

/// One sd_event_source of an `SDEventLoop`: an I/O watch, a timer, a deferred
/// call, a signal. The Swift object owns the C source: `cancel()`, or the
/// object's deinit, disables and unrefs it, so its handler never runs again.
///
/// Confined to the loop's thread, like the loop's sd_event itself (sd-event
/// is not thread-safe): create, change and drop sources on that thread (or
/// before the loop runs). Other threads reach the loop through
/// `SDEventLoop.execute` and `submit`.
package class EventSource {
    /// The C source; nil once cancelled.
    private(set) var pointer: OpaquePointer?

    init() {}

    deinit { cancel() }

    /// Whether `cancel()` ran (or registration never completed).
    package var isCancelled: Bool { pointer == nil }

    /// Disables and unrefs the C source: its handler will not run again, even
    /// when the source is cancelled from within its own handler. Idempotent.
    package func cancel() {
        guard let pointer else { return }
        self.pointer = nil
        // Unrefs exactly once; sd-event frees the source (and its destroy
        // callback releases the handler box) when its last reference goes,
        // which is after the dispatch when we are inside the handler.
        sd_event_source_disable_unref(pointer)
    }

    /// Whether and how often the source fires.
    package enum Enablement: Sendable {
        /// Never, until enabled again.
        case off
        /// Every time its condition holds.
        case on
        /// Once, then `off` (a timer's default).
        case oneShot

        var rawValue: Int32 {
            switch self {
            case .off: Int32(SD_EVENT_OFF)
            case .on: Int32(SD_EVENT_ON)
            case .oneShot: Int32(SD_EVENT_ONESHOT)
            }
        }
    }

    package func setEnablement(_ enablement: Enablement) throws(SDEventError) {
        try check("sd_event_source_set_enabled", sd_event_source_set_enabled(try live(), enablement.rawValue))
    }

    package func enablement() throws(SDEventError) -> Enablement {
        var raw: Int32 = 0
        try check("sd_event_source_get_enabled", sd_event_source_get_enabled(try live(), &raw))
        switch raw {
        case Int32(SD_EVENT_ON): return .on
        case Int32(SD_EVENT_ONESHOT): return .oneShot
        default: return .off
        }
    }

    /// Lower runs first among sources pending in the same iteration (sd-event's
    /// priority; 0 is the default).
    package func setPriority(_ priority: Int64) throws(SDEventError) {
        try check("sd_event_source_set_priority", sd_event_source_set_priority(try live(), priority))
    }

    /// A name in sd-event's debug logs (`SYSTEMD_LOG_LEVEL=debug`).
    package func setName(_ name: String) throws(SDEventError) {
        try check("sd_event_source_set_description", sd_event_source_set_description(try live(), name))
    }

    /// The C source, or ESTALE once cancelled.
    func live() throws(SDEventError) -> OpaquePointer {
        guard let pointer else { throw SDEventError("sd_event_source", errno: ESTALE) }
        return pointer
    }

    /// Adds the C source through ADD, with a new handler box as its userdata.
    ///
    /// The box is retained once here and released exactly once: by the
    /// source's destroy callback when sd-event frees the source, or here when
    /// the source could not be added.
    static func register<Source: EventSource>(
        _ source: Source, census: SourceCensus, _ operation: String,
        _ add: (UnsafeMutablePointer<OpaquePointer?>, UnsafeMutableRawPointer) -> Int32
    ) throws(SDEventError) {
        let box = SourceBox<Source>(source, census: census)
        let userdata = Unmanaged.passRetained(box).toOpaque()
        var pointer: OpaquePointer?
        let code = add(&pointer, userdata)
        guard code >= 0, let pointer else {
            Unmanaged<SourceBox<Source>>.fromOpaque(userdata).release()
            throw SDEventError(operation, returned: code < 0 ? code : -EINVAL)
        }
        let installed = sd_event_source_set_destroy_callback(pointer) { userdata in
            guard let userdata else { return }
            Unmanaged<AnyObject>.fromOpaque(userdata).release()
        }
        guard installed >= 0 else {
            sd_event_source_disable_unref(pointer)
            Unmanaged<SourceBox<Source>>.fromOpaque(userdata).release()
            throw SDEventError("sd_event_source_set_destroy_callback", returned: installed)
        }
        source.pointer = pointer
    }
}

/// The userdata of one C source: an unowned reference to its Swift object
/// (which holds the handler), so that the C source keeps no Swift object
/// alive and a dropped source object simply cancels the C source. Unowned, not
/// weak: the object's deinit disables the C source, so sd-event never calls
/// back for a dead object (an unowned load costs about 100 instructions less
/// per dispatch than a weak one, measured with eventloop-bench and callgrind).
final class SourceBox<Source: AnyObject> {
    unowned let source: Source
    private let census: SourceCensus

    init(_ source: Source, census: SourceCensus) {
        self.source = source
        self.census = census
        census.added()
    }

    deinit { census.removed() }

    /// The Swift source of a C callback's userdata, if it is still alive.
    static func source(of userdata: UnsafeMutableRawPointer?) -> Source? {
        guard let userdata else { return nil }
        return Unmanaged<SourceBox>.fromOpaque(userdata).takeUnretainedValue().source
    }
}

/// How many handler boxes of a loop's sources are alive: each lives exactly
/// as long as its C source, so a count that does not come back to zero after
/// every source is cancelled is a leak (and an over-release would crash).
package final class SourceCensus: Sendable {
    private let count = Atomic<Int>(0)

    init() {}

    package var live: Int { count.load(ordering: .relaxed) }

    func added() { count.add(1, ordering: .relaxed) }
    func removed() { count.subtract(1, ordering: .relaxed) }
}
