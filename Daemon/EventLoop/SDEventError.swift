import Glibc

/// A failed sd-event (or eventfd, or pthread) call: which call, and the errno
/// it reported. sd-event returns `-errno`; the initializers take either form.
package struct SDEventError: Error, Equatable, CustomStringConvertible {
    /// The C function that failed, e.g. `sd_event_add_io`.
    package let operation: String
    /// The positive errno value.
    package let errno: Int32

    package init(_ operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    /// From an sd-event return value (negative errno).
    init(_ operation: String, returned code: Int32) {
        self.init(operation, errno: -code)
    }

    /// The loop has stopped and takes no more work (`execute`, `submit`).
    package static let loopClosed = SDEventError("execute", errno: ESHUTDOWN)

    package var description: String {
        "\(operation): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// Checks an sd-event return value: negative is `-errno`.
@discardableResult
func check(_ operation: String, _ code: Int32) throws(SDEventError) -> Int32 {
    guard code >= 0 else { throw SDEventError(operation, returned: code) }
    return code
}
