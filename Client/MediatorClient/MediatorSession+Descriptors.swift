import MediatorProtocol

/// Calls that pass file descriptors, for a session made with `fds: true`.
extension MediatorSession {
    /// ``MediatorClient/call(target:action:params:descriptors:timeout:)``
    /// on the current connection, waiting for one (up to `timeout`) when
    /// there is none.
    ///
    /// - Throws: `unreachable` when no connection came in time;
    ///   `disconnected` (with `delivered` unknown) when the connection was
    ///   lost with the call in flight; else as the call (`fds_not_supported`
    ///   for a session made without `fds: true`).
    public func call(
        target: String, action: String, params: JSONValue = .object([:]), descriptors: [OwnedFileDescriptor],
        timeout: Duration? = nil
    ) async throws(MediatorError) -> MediatorReply {
        let client = try await connectedClient(within: timeout ?? Self.defaultWait)
        return try await client.call(target: target, action: action, params: params, descriptors: descriptors, timeout: timeout)
    }
}
