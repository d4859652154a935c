import Logging
import MediatorProtocol
import Tracing

/// Connects, runs `body` with the client, and closes the connection when
/// `body` returns or throws: the scoped form, as grpc-swift's
/// `withGRPCClient` and NIO's `executeThenClose` give, for code that should
/// not have to remember ``MediatorClient/close()``.
///
/// ```swift
/// let notes = try await withMediatorClient(name: "my-app") { client in
///     try await client.call(target: "Notes", action: "list")
/// }
/// ```
///
/// The parameters are those of ``MediatorClient/connect(socketPath:name:maxFrameBytes:fds:tracer:logger:interceptors:)``.
///
/// - Returns: what `body` returns.
/// - Throws: what `connect` throws (`unreachable` when the daemon's socket
///   cannot be reached), or what `body` throws; the connection is closed
///   either way.
public func withMediatorClient<Result: Sendable>(
    socketPath: String? = nil, name: String? = nil, maxFrameBytes: Int = ProtocolConstants.defaultMaxFrameBytes,
    fds: Bool = false, tracer: (any Tracer)? = nil, logger: Logger? = nil, interceptors: [any ClientInterceptor] = [],
    _ body: (MediatorClient) async throws -> Result
) async throws -> Result {
    let client = try await MediatorClient.connect(
        socketPath: socketPath, name: name, maxFrameBytes: maxFrameBytes, fds: fds, tracer: tracer, logger: logger,
        interceptors: interceptors)
    do {
        let result = try await body(client)
        await client.close()
        return result
    } catch {
        await client.close()
        throw error
    }
}
