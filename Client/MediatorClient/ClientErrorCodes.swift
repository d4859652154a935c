import MediatorProtocol

/// The codes the Swift library adds to the contract's (contract section 7
/// lists the daemon's own).
extension ErrorCode {
    /// Client side only, never on the wire: the daemon's socket could not be
    /// reached (no file, refused, permission, path too long...).
    public static let unreachable = ErrorCode("unreachable")
    /// Client side only, never on the wire: the connection closed while the
    /// call was in flight, or before it could be sent.
    public static let disconnected = ErrorCode("disconnected")
    /// What a ``Component`` answers when a handler throws an error that is
    /// not a `MediatorError`: the message is `TypeName: description`, the
    /// data `{"type": "TypeName"}`.
    public static let failed = ErrorCode("failed")
    /// A component's answer for an action it declares but does not implement
    /// (the Python library's, for a generated service method not overridden;
    /// docs/protocol.md, "Our extensions").
    public static let notImplemented = ErrorCode("not_implemented")
}

extension MediatorError {
    static func disconnected(_ reason: String) -> MediatorError {
        MediatorError(.disconnected, reason)
    }

    static let callCancelled = MediatorError(.cancelled, "the call was cancelled")
}
