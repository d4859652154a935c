import CNats

/// libnats, loaded on first use rather than linked (see `CNats/shim.h`):
/// a daemon that never connects to NATS never maps it, nor OpenSSL with
/// it, and a system without libnats runs all but the bridge.
enum LibNATS {
    // nonisolated(unsafe): written once by Swift's lazy global initialization
    // (thread-safe), then only read; the table behind it never changes.
    nonisolated(unsafe) private static let loaded: Result<UnsafePointer<mediator_nats>, NATSError> = {
        var problem: UnsafePointer<CChar>?
        guard let table = mediator_nats_load(&problem) else {
            let reason = problem.map { String(cString: $0) } ?? "unknown"
            let library = String(cString: mediator_nats_soname())
            return .failure(NATSError(
                status: -1, text: "\(library) cannot be loaded (\(reason)); on Debian it is the package libnats3.4",
                operation: "load libnats"))
        }
        return .success(table)
    }()

    /// Loads libnats if it is not yet; throws when it is not installed.
    static func load() throws(NATSError) {
        _ = try loaded.get()
    }

    /// The table if libnats is loaded.
    static var ifLoaded: UnsafePointer<mediator_nats>? { try? loaded.get() }

    /// The table, for code that runs only after ``load()`` succeeded: every
    /// libnats object this module holds was made through it.
    static var table: mediator_nats {
        guard case .success(let table) = loaded else {
            preconditionFailure("libnats used before it was loaded")
        }
        return table.pointee
    }
}

/// The libnats functions (``LibNATS/table``).
var libnats: mediator_nats { LibNATS.table }
