/// Constants of the wire contract that every peer shares.
public enum ProtocolConstants {
    /// The protocol version this code speaks in `hello`.
    public static let version: Int64 = 1
    /// The target name of the daemon itself.
    public static let daemonTarget = "mediator"
    /// The daemon's default frame limit, without the LF.
    public static let defaultMaxFrameBytes = 1 << 20
    /// The default call timeout when a request has no `timeout_ms`.
    public static let defaultTimeoutMs: Int64 = 30_000
    /// The system instance's socket, where clients connect unless told otherwise.
    public static let systemSocketPath = "/run/mediator/mediator.sock"
    /// The most descriptors one message can carry (contract section 8):
    /// the kernel's limit on one SCM_RIGHTS message (SCM_MAX_FD). A
    /// message's `fds` above it is refused whatever the receiver's `max_fds`.
    public static let maxFdsPerMessageLimit = 253
    /// The least `max_fds` a daemon may answer `hello` with when a peer
    /// says `"fds": true` (contract section 8), so that a peer can count on
    /// that many without asking.
    public static let minimumMaxFds = 16

    /// The system instance's socket path per the contract: `--socket` wins,
    /// then `MEDIATOR_SOCKET`, then /run/mediator/mediator.sock.
    public static func socketPath(explicit: String?, environment: [String: String]) -> String {
        chosenSocketPath(explicit: explicit, environment: environment) ?? systemSocketPath
    }

    /// The socket path per the contract: `--socket` wins, then
    /// `MEDIATOR_SOCKET`, then the default of the instance asked for: the
    /// system one unless `userInstance` (like `busctl --user`), which lives
    /// under `XDG_RUNTIME_DIR`; without it, an error, never the system one.
    public static func socketPath(explicit: String?, environment: [String: String], userInstance: Bool)
        throws(UserRuntimeDirectoryUnset) -> String
    {
        if let chosen = chosenSocketPath(explicit: explicit, environment: environment) { return chosen }
        guard userInstance else { return systemSocketPath }
        guard let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty else { throw UserRuntimeDirectoryUnset() }
        return runtime + "/mediator/mediator.sock"
    }

    /// `--socket`, else `MEDIATOR_SOCKET`; nil when neither is given.
    static func chosenSocketPath(explicit: String?, environment: [String: String]) -> String? {
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = environment["MEDIATOR_SOCKET"], !fromEnvironment.isEmpty { return fromEnvironment }
        return nil
    }
}
