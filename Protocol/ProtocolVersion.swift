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
