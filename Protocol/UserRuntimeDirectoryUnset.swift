/// A user instance was asked for (`--user`) without `XDG_RUNTIME_DIR`,
/// under which its socket lives. Refused rather than falling back to the
/// system instance, as `systemctl --user` refuses.
public struct UserRuntimeDirectoryUnset: Error, CustomStringConvertible, Sendable {
    /// The error; it says what to do in ``description``.
    public init() {}

    public var description: String {
        "$XDG_RUNTIME_DIR not set: the user instance's socket is $XDG_RUNTIME_DIR/mediator/mediator.sock; "
            + "run from a login session (which sets it) or pass --socket PATH"
    }
}
