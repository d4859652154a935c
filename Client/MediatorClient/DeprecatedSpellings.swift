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

    /// Deprecated: ``send(target:action:params:)``.
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
