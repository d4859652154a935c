import MediatorProtocol

// The spellings before the labelled ones (issue 27): forwards kept for one
// release so that callers move at their own pace; remove them in the next.

extension MediatorClient {
    /// Deprecated: ``call(target:action:params:timeout:)``.
    @available(*, deprecated, renamed: "call(target:action:params:timeout:)")
    public func call(
        _ target: String, _ action: String, params: JSONValue = .object([:]), timeout: Duration? = nil
    ) async throws(MediatorError) -> JSONValue {
        try await call(target: target, action: action, params: params, timeout: timeout)
    }

    /// Deprecated: ``send(target:action:params:)-(_,_,JSONValue)``.
    @available(*, deprecated, renamed: "send(target:action:params:)")
    public func send(_ target: String, _ action: String, params: JSONValue = .object([:])) async throws(MediatorError) {
        try await send(target: target, action: action, params: params)
    }

    /// Deprecated: ``stream(target:action:params:timeout:)``.
    @available(*, deprecated, renamed: "stream(target:action:params:timeout:)")
    public func stream(
        _ target: String, _ action: String, params: JSONValue = .object([:]), timeout: Duration? = nil
    ) -> MediatorStream<JSONValue> {
        stream(target: target, action: action, params: params, timeout: timeout)
    }

    /// Deprecated: the `Codable` `call(target:action:params:as:timeout:)`.
    @available(*, deprecated, renamed: "call(target:action:params:as:timeout:)")
    public func call<Params: Encodable & Sendable, Result: Decodable & Sendable>(
        _ target: String, _ action: String, _ params: Params, as: Result.Type, timeout: Duration? = nil
    ) async throws(MediatorError) -> Result {
        try await call(target: target, action: action, params: params, as: Result.self, timeout: timeout)
    }

    /// Deprecated: the `Codable` `send(target:action:params:)`.
    @available(*, deprecated, renamed: "send(target:action:params:)")
    public func send<Params: Encodable & Sendable>(
        _ target: String, _ action: String, _ params: Params
    ) async throws(MediatorError) {
        try await send(target: target, action: action, params: params)
    }

    /// Deprecated: the `Codable` `stream(target:action:params:as:timeout:)`.
    @available(*, deprecated, renamed: "stream(target:action:params:as:timeout:)")
    public func stream<Params: Encodable & Sendable, Result: Decodable & Sendable>(
        _ target: String, _ action: String, _ params: Params, as: Result.Type, timeout: Duration? = nil
    ) -> MediatorStream<Result> {
        stream(target: target, action: action, params: params, as: Result.self, timeout: timeout)
    }

    /// Deprecated: the ``JSONValueConvertible`` `call(target:action:params:as:timeout:)`.
    @available(*, deprecated, renamed: "call(target:action:params:as:timeout:)")
    @inlinable
    public func call<Params: JSONValueConvertible, Result: JSONValueConvertible>(
        _ target: String, _ action: String, _ params: Params, as: Result.Type, timeout: Duration? = nil
    ) async throws(MediatorError) -> Result {
        try await call(target: target, action: action, params: params, as: Result.self, timeout: timeout)
    }

    /// Deprecated: the ``JSONValueConvertible`` `send(target:action:params:)`.
    @available(*, deprecated, renamed: "send(target:action:params:)")
    @inlinable
    public func send<Params: JSONValueConvertible>(
        _ target: String, _ action: String, _ params: Params
    ) async throws(MediatorError) {
        try await send(target: target, action: action, params: params)
    }

    /// Deprecated: the ``JSONValueConvertible`` `stream(target:action:params:as:timeout:)`.
    @available(*, deprecated, renamed: "stream(target:action:params:as:timeout:)")
    public func stream<Params: JSONValueConvertible, Result: JSONValueConvertible>(
        _ target: String, _ action: String, _ params: Params, as: Result.Type, timeout: Duration? = nil
    ) -> MediatorStream<Result> {
        stream(target: target, action: action, params: params, as: Result.self, timeout: timeout)
    }
}

extension MediatorSession {
    /// Deprecated: ``call(target:action:params:timeout:)``.
    @available(*, deprecated, renamed: "call(target:action:params:timeout:)")
    public func call(
        _ target: String, _ action: String, params: JSONValue = .object([:]), timeout: Duration? = nil
    ) async throws(MediatorError) -> JSONValue {
        try await call(target: target, action: action, params: params, timeout: timeout)
    }
}

extension Component {
    /// Deprecated: `addAction(_:description:params:result:url:_:)`.
    @available(*, deprecated, renamed: "addAction(_:description:params:result:url:_:)")
    public mutating func action(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (CallContext) async throws -> JSONValue
    ) {
        addAction(name, description: description, params: params, result: result, url: url, handler)
    }

    /// Deprecated: `addAction(_:description:params:result:url:_:)`, a handler that does not suspend.
    @available(*, deprecated, renamed: "addAction(_:description:params:result:url:_:)")
    public mutating func action(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (CallContext) throws -> JSONValue
    ) {
        addAction(name, description: description, params: params, result: result, url: url, handler)
    }

    /// Deprecated: the `Codable` `addAction(_:description:params:result:url:_:)`.
    @available(*, deprecated, renamed: "addAction(_:description:params:result:url:_:)")
    public mutating func action<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (P, CallContext) async throws -> R
    ) {
        addAction(name, description: description, params: params, result: result, url: url, handler)
    }

    /// Deprecated: the `Codable` `addAction(_:description:params:result:url:_:)`, a handler that does not suspend.
    @available(*, deprecated, renamed: "addAction(_:description:params:result:url:_:)")
    public mutating func action<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (P, CallContext) throws -> R
    ) {
        addAction(name, description: description, params: params, result: result, url: url, handler)
    }

    /// Deprecated: the ``JSONValueConvertible`` `addAction(_:description:params:result:url:_:)`.
    @available(*, deprecated, renamed: "addAction(_:description:params:result:url:_:)")
    public mutating func action<P: JSONValueConvertible, R: JSONValueConvertible>(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (P, CallContext) async throws -> R
    ) {
        addAction(name, description: description, params: params, result: result, url: url, handler)
    }

    /// Deprecated: the ``JSONValueConvertible`` `addAction(_:description:params:result:url:_:)`, a handler that
    /// does not suspend.
    @available(*, deprecated, renamed: "addAction(_:description:params:result:url:_:)")
    public mutating func action<P: JSONValueConvertible, R: JSONValueConvertible>(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (P, CallContext) throws -> R
    ) {
        addAction(name, description: description, params: params, result: result, url: url, handler)
    }

    /// Deprecated: the `Codable` `addAction(_:_:)` from a complete ActionSpec.
    @available(*, deprecated, renamed: "addAction(_:_:)")
    public mutating func action<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (P, CallContext) async throws -> R
    ) {
        addAction(spec, handler)
    }

    /// Deprecated: the `Codable` `addAction(_:_:)`, a handler that does not suspend.
    @available(*, deprecated, renamed: "addAction(_:_:)")
    public mutating func action<P: Decodable & Sendable, R: Encodable & Sendable>(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (P, CallContext) throws -> R
    ) {
        addAction(spec, handler)
    }

    /// Deprecated: the ``JSONValueConvertible`` `addAction(_:_:)`.
    @available(*, deprecated, renamed: "addAction(_:_:)")
    public mutating func action<P: JSONValueConvertible, R: JSONValueConvertible>(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (P, CallContext) async throws -> R
    ) {
        addAction(spec, handler)
    }

    /// Deprecated: the ``JSONValueConvertible`` `addAction(_:_:)`, a handler that does not suspend.
    @available(*, deprecated, renamed: "addAction(_:_:)")
    public mutating func action<P: JSONValueConvertible, R: JSONValueConvertible>(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (P, CallContext) throws -> R
    ) {
        addAction(spec, handler)
    }

    /// Deprecated: ``handleNotFound(_:)``.
    @available(*, deprecated, renamed: "handleNotFound(_:)")
    public mutating func notFound(
        _ handler: @escaping @Sendable (_ action: String, _ params: JSONValue, CallContext) async throws -> JSONValue
    ) {
        handleNotFound(handler)
    }
}

extension Component {
    /// Deprecated: set ``socketPath``, ``connectionName`` and
    /// ``onRegistered``, then call ``run()``, so that a component's
    /// configuration is in one place (and the same whether it runs alone or
    /// in a `ServiceGroup`). The arguments here are used instead of those
    /// properties.
    @available(*, deprecated, message: "set socketPath, connectionName and onRegistered, then call run()")
    public func run(
        socketPath: String? = nil, name: String? = nil, onRegistered: (@Sendable () async -> Void)? = nil
    ) async throws(MediatorError) {
        try await serve(socketPath: socketPath, name: name, onRegistered: onRegistered)
    }
}
