/// Why a snapshot cannot be read or restored. Any of these makes the
/// daemon fall back to a clean restart (issue 28); none comes from a peer.
enum SnapshotError: Error, Equatable, CustomStringConvertible {
    /// The encoding is larger than the reader accepts.
    case tooLarge(bytes: Int, limit: Int)
    /// Not JSON (a truncated file ends up here).
    case notJSON(String)
    /// JSON, but not a broker snapshot (`kind`).
    case notASnapshot
    /// A snapshot of a version this daemon does not read.
    case unsupportedVersion(Int64)
    /// A member missing or of the wrong type, by its path.
    case malformed(path: String, expected: String)
    /// The snapshot is read, but its parts contradict each other.
    case inconsistent(String)
    /// Restoring into a broker that already has connections.
    case brokerNotEmpty

    var description: String {
        switch self {
        case .tooLarge(let bytes, let limit): return "snapshot of \(bytes) bytes, over the limit of \(limit)"
        case .notJSON(let reason): return "snapshot is not JSON: \(reason)"
        case .notASnapshot: return "not a broker snapshot (kind)"
        case .unsupportedVersion(let version): return "snapshot version \(version) is not supported (this daemon reads \(BrokerSnapshot.readableVersions.lowerBound) to \(BrokerSnapshot.currentVersion))"
        case .malformed(let path, let expected): return "snapshot member \(path): expected \(expected)"
        case .inconsistent(let reason): return "snapshot is inconsistent: \(reason)"
        case .brokerNotEmpty: return "a snapshot is restored only into a broker without connections"
        }
    }
}
