import MediatorEventLoop
import MediatorSocket

/// Why a ``LineServerHandOver`` cannot be read or adopted. None comes from
/// a peer: the daemon falls back to a clean restart (issue 28).
package enum LineServerHandOverError: Error, Equatable, CustomStringConvertible {
    /// The encoding is larger than the reader accepts.
    case tooLarge(bytes: Int, limit: Int)
    /// It does not start with the hand-over's magic bytes.
    case notAHandOver
    /// A version this daemon does not read.
    case unsupportedVersion(UInt32)
    /// It ends before `field`.
    case truncated(field: String)
    /// A field holds what cannot be (named), or bytes follow the end.
    case malformed(String)
    /// The descriptors given are not those the encoding refers to.
    case descriptorMismatch(String)
    /// The listener handed over cannot be adopted.
    case listener(SocketError)
    /// The loop refused a source.
    case eventLoop(SDEventError)

    package var description: String {
        switch self {
        case .tooLarge(let bytes, let limit): "socket hand-over of \(bytes) bytes, over the limit of \(limit)"
        case .notAHandOver: "not a socket hand-over (magic bytes)"
        case .unsupportedVersion(let version):
            "socket hand-over version \(version) is not supported (this daemon reads \(LineServerHandOver.currentVersion))"
        case .truncated(let field): "socket hand-over ends before \(field)"
        case .malformed(let reason): "socket hand-over is malformed: \(reason)"
        case .descriptorMismatch(let reason): "socket hand-over descriptors: \(reason)"
        case .listener(let error): "socket hand-over listener: \(error)"
        case .eventLoop(let error): "socket hand-over: \(error)"
        }
    }
}
