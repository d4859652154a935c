/// What one ``UnixStreamSocket/receive(into:descriptorCapacity:)`` call got.
package enum ReceiveOutcome: Sendable {
    /// `byteCount` bytes (at least one) were read into the buffer.
    /// `descriptors` are the ones that arrived with them, in order, now
    /// owned by the caller. `descriptorsTruncated` says the control buffer
    /// was too small (MSG_CTRUNC): the kernel dropped some, and those that
    /// did arrive were closed, so `descriptors` is empty.
    case received(byteCount: Int, descriptors: [OwnedDescriptor], descriptorsTruncated: Bool)
    /// Nothing to read now (EAGAIN): wait until the socket is readable.
    case wouldBlock
    /// The peer closed its end, or shut down writing.
    case endOfStream
}

/// What one ``UnixStreamSocket/send(_:descriptors:)`` call did.
package enum SendOutcome: Sendable, Equatable {
    /// The first `byteCount` bytes were written (maybe fewer than given).
    /// The descriptors, if any, went with the first of them: send the rest
    /// without them.
    case sent(byteCount: Int)
    /// Nothing was written, the descriptors neither (EAGAIN): wait until
    /// the socket is writable and send the same again.
    case wouldBlock
}
