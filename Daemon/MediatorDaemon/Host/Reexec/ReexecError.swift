import MediatorSocketHost

#if canImport(Glibc)
import Glibc
#endif

/// Why a re-exec did not happen, or why the new image could not carry on
/// from its predecessor's hand-over (then it falls back to a clean restart).
enum ReexecError: Error, Equatable, CustomStringConvertible {
    /// A system call failed: which, and its errno.
    case system(String, Int32)
    /// The hand-over's own framing cannot be read (named).
    case handOver(String)
    /// The hand-over is of a version this image does not read.
    case unsupportedVersion(Int64)
    /// The broker's snapshot cannot be read or restored.
    case snapshot(SnapshotError)
    /// The sockets' hand-over cannot be read or adopted.
    case sockets(LineServerHandOverError)
    /// The daemon cannot re-exec now (stopping, no binary path, ...).
    case unavailable(String)

    var description: String {
        switch self {
        case .system(let call, let code): return "\(call): \(String(cString: strerror(code)))"
        case .handOver(let reason): return "hand-over: \(reason)"
        case .unsupportedVersion(let version):
            return "hand-over version \(version) is not supported (this daemon reads \(ReexecHandOver.currentVersion))"
        case .snapshot(let error): return "\(error)"
        case .sockets(let error): return "\(error)"
        case .unavailable(let reason): return reason
        }
    }
}
