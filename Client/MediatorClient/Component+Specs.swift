import MediatorProtocol

extension Component {
    /// Declares an action from a complete ActionSpec (as read from an
    /// interface file with `ActionSpec(json:)`), with `Decodable` params and
    /// an `Encodable` result; what generated `Component(serving:)`
    /// initializers use. Serving, streams and cancellation are those of
    /// the typed `addAction(_:description:params:result:url:_:)`: params that
    /// do not decode are answered with `invalid_params`.
    public mutating func addAction<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (P, CallContext) async throws -> R
    ) {
        // Registered as given, every member included (`more`, `oneway`):
        // the daemon then checks calls against the interface's own specs.
        declareDecoding(spec, handler)
    }

    /// The same for a handler that does not suspend (no task per call with
    /// ``Component/HandlerExecutor/connection``).
    public mutating func addAction<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (P, CallContext) throws -> R
    ) {
        declareDecoding(spec, handler)
    }

    /// An action from a complete ActionSpec whose params and result convert
    /// to and from `JSONValue` directly (generated interface types).
    @inlinable
    public mutating func addAction<P: JSONValueConvertible, R: JSONValueConvertible>(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (P, CallContext) async throws -> R
    ) {
        declareConverting(spec, handler)
    }

    /// The same for a handler that does not suspend.
    @inlinable
    public mutating func addAction<P: JSONValueConvertible, R: JSONValueConvertible>(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (P, CallContext) throws -> R
    ) {
        declareConverting(spec, handler)
    }
}
