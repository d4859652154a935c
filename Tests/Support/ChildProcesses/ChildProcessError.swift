import Glibc

/// A child that could not be started, read or found; its text is what the
/// tools print.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }

    static func sys(_ what: String, _ code: Int32 = errno) -> ChildProcessError {
        ChildProcessError("\(what): \(String(cString: strerror(code)))")
    }
}
