import MediatorProtocol

extension ErrorCode {
    /// Client side only, never on the wire: the daemon's socket could not be
    /// reached (no file, refused, permission, path too long...).
    public static let unreachable = ErrorCode("unreachable")
    /// Client side only, never on the wire: the connection closed while the
    /// call was in flight, or before it could be sent.
    public static let disconnected = ErrorCode("disconnected")
    /// What a ``Component`` answers when a handler throws an error that is
    /// not a ``MediatorError``; the message is the error's description.
    public static let failed = ErrorCode("failed")
}

extension MediatorError {
    static func disconnected(_ reason: String) -> MediatorError {
        MediatorError(.disconnected, reason)
    }

    static let callCancelled = MediatorError(.cancelled, "the call was cancelled")
}
