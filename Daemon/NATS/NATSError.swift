import CNats

/// A libnats call that failed: its `natsStatus`, the library's text for it,
/// and what we were doing.
package struct NATSError: Error, Sendable, Equatable, CustomStringConvertible {
    /// libnats's `natsStatus` value (`NATS_OK` is 0 and never an error).
    package let status: Int32
    /// `natsStatus_GetText`, or libnats's last error text when it says more.
    package let text: String
    /// What failed, e.g. "connect to nats://127.0.0.1:4222".
    package let operation: String

    package init(status: Int32, text: String, operation: String) {
        self.status = status
        self.text = text
        self.operation = operation
    }

    /// An error from a `natsStatus`, with libnats's thread-local last error
    /// when it has one (it names the server, the file, the field).
    init(_ status: natsStatus, _ operation: String) {
        var text = libnats.natsStatus_GetText(status).map { String(cString: $0) } ?? "NATS status \(status.rawValue)"
        var last = NATS_OK
        if let detail = libnats.nats_GetLastError(&last), last != NATS_OK {
            let more = String(cString: detail)
            if !more.isEmpty && more != text { text += ": " + more }
        }
        self.init(status: Int32(status.rawValue), text: text, operation: operation)
    }

    /// A usage error found before libnats was called (bad options).
    package static func invalid(_ text: String, _ operation: String) -> NATSError {
        NATSError(status: Int32(NATS_INVALID_ARG.rawValue), text: text, operation: operation)
    }

    package var description: String { "\(operation): \(text)" }

    /// Whether it is the server refusing the credentials.
    package var isAuthorizationFailure: Bool {
        status == Int32(NATS_CONNECTION_AUTH_FAILED.rawValue) || status == Int32(NATS_NOT_PERMITTED.rawValue)
            || text.lowercased().contains("authorization")
    }
}

/// Throws a ``NATSError`` unless `status` is `NATS_OK`.
@inline(__always)
func check(_ status: natsStatus, _ operation: @autoclosure () -> String) throws(NATSError) {
    if status != NATS_OK { throw NATSError(status, operation()) }
}

extension NATSError {
    /// An error libnats reports to the error handler, on its own thread:
    /// the thread-local last error means nothing there, the connection's
    /// does (it holds the server's words, e.g. "Permissions Violation for
    /// Publish to ..."), when it is about the same status.
    init(asynchronous status: natsStatus, _ connection: OpaquePointer?, _ subscription: OpaquePointer?) {
        var text = libnats.natsStatus_GetText(status).map { String(cString: $0) } ?? "NATS status \(status.rawValue)"
        if let connection {
            var detail: UnsafePointer<CChar>?
            // The text lives in the connection and changes with its next error: copied at once.
            if libnats.natsConnection_GetLastError(connection, &detail) == status, let detail {
                let more = String(cString: detail)
                if !more.isEmpty && more != text { text += ": " + more }
            }
        }
        let operation = subscription.flatMap { libnats.natsSubscription_GetSubject($0) }.map { "NATS subscription \(String(cString: $0))" }
        self.init(status: Int32(status.rawValue), text: text, operation: operation ?? "NATS connection")
    }
}
