#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import MediatorProtocol

extension MediatorClient {
    /// A call with `Encodable` params and a `Decodable` result, through
    /// Foundation's JSON coders.
    ///
    /// - Throws: `invalid_params` (locally, nothing sent) when `params` does
    ///   not encode to a JSON object; `invalid_result` when the
    ///   result does not decode as `Result`; else as
    ///   ``call(target:action:params:timeout:)``.
    public func call<Params: Encodable & Sendable, Result: Decodable & Sendable>(
        target: String, action: String, params: Params, as: Result.Type, timeout: Duration? = nil
    ) async throws(MediatorError) -> Result {
        // Codable to bytes and back: no JSONValue tree in between.
        let bytes = try await callEncoded(target, action, encodedParams: JSONBridge.encodedParams(params), timeout: timeout)
        return try JSONBridge.result(Result.self, fromText: bytes)
    }
}

extension MediatorClient {
    /// A oneway call with `Encodable` params: sent without an id, nothing
    /// comes back. Throws `invalid_params` (locally, nothing sent) when
    /// `params` does not encode to a JSON object. Disfavoured so that a
    /// dictionary literal goes to the `JSONValue` form, as it did before
    /// both were spelled `send(target:action:params:)`.
    @_disfavoredOverload
    public func send<Params: Encodable & Sendable>(
        target: String, action: String, params: Params
    ) async throws(MediatorError) {
        try await send(target: target, action: action, params: JSONBridge.params(params))
    }

    /// A call with several responses (`more`), each decoded as `Result`:
    /// the partials, then the final one. Ending the iteration early, or
    /// cancelling the iterating task, cancels the call. A response that does
    /// not decode ends the stream with `invalid_result`.
    public func stream<Params: Encodable & Sendable, Result: Decodable & Sendable>(
        target: String, action: String, params: Params, as: Result.Type, timeout: Duration? = nil
    ) -> MediatorStream<Result> {
        MediatorStream(AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    let json = try JSONBridge.params(params)
                    for try await value in stream(target: target, action: action, params: json, timeout: timeout) {
                        continuation.yield(try JSONBridge.result(Result.self, from: value))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        })
    }
}

extension CallContext {
    /// Sends an `Encodable` partial result (`"continues": true`); ignored
    /// unless the caller asked for several responses (`more`). Throws
    /// `failed` when the value does not encode as JSON.
    public func send<Partial: Encodable & Sendable>(encoding partial: Partial) async throws(MediatorError) {
        let value: JSONValue
        do {
            value = try JSONBridge.value(from: partial)
        } catch {
            throw MediatorError(.failed, "the partial result does not encode as JSON: \(error)")
        }
        await send(partial: value)
    }
}

/// Converts between `Codable` values and `JSONValue` through JSON bytes.
@usableFromInline enum JSONBridge {
    static func value(from encodable: some Encodable) throws -> JSONValue {
        let data = try JSONEncoder().encode(encodable)
        return try JSONParser.parse(data)
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from value: JSONValue) throws -> Value {
        try JSONDecoder().decode(type, from: Data(value.encoded))
    }

    /// Params as a JSON object, or `invalid_params` (nothing is sent).
    static func params(_ params: some Encodable) throws(MediatorError) -> JSONValue {
        let json: JSONValue
        do {
            json = try value(from: params)
        } catch {
            throw MediatorError(.invalidParams, "params do not encode as JSON: \(error)")
        }
        guard case .object = json else {
            throw MediatorError(.invalidParams, "params must encode to a JSON object, not \(json.typeName)")
        }
        return json
    }

    /// Params as one JSON object's text, or `invalid_params` (nothing is
    /// sent). JSONEncoder writes compact JSON, an object first of all for a
    /// keyed container; anything else is refused as `params(_:)` does.
    static func encodedParams(_ params: some Encodable) throws(MediatorError) -> [UInt8] {
        let data: Data
        do {
            data = try JSONEncoder().encode(params)
        } catch {
            throw MediatorError(.invalidParams, "params do not encode as JSON: \(error)")
        }
        guard data.first == UInt8(ascii: "{") else {
            let kind = (try? JSONParser.parse(data))?.typeName ?? "something else"
            throw MediatorError(.invalidParams, "params must encode to a JSON object, not \(kind)")
        }
        return Array(data)
    }

    /// A result's JSON text decoded as `Value`, or `invalid_result`.
    static func result<Value: Decodable>(_ type: Value.Type, fromText text: [UInt8]) throws(MediatorError) -> Value {
        do {
            return try JSONDecoder().decode(type, from: Data(text))
        } catch {
            throw MediatorError(.invalidResult, "the result does not decode as \(Value.self): \(error)")
        }
    }

    /// A result decoded as `Value`, or `invalid_result`.
    static func result<Value: Decodable>(_ type: Value.Type, from value: JSONValue) throws(MediatorError) -> Value {
        do {
            return try decode(type, from: value)
        } catch {
            throw MediatorError(.invalidResult, "the result does not decode as \(Value.self): \(error)")
        }
    }
}

// MARK: - Types that convert to JSONValue directly (generated interfaces)

extension MediatorClient {
    /// A typed call whose params and result convert to and from
    /// `JSONValue` directly (``JSONValueConvertible``, as generated
    /// interface types do): no trip through Foundation's JSON coders.
    /// Params out of their schema's bounds (``JSONValueConvertible/validate()``)
    /// are refused with `invalid_params`, nothing sent. Errors otherwise as
    /// the `Codable` form. Inlinable: specialized in the
    /// caller's module, the conversions are direct calls.
    @inlinable
    public func call<Params: JSONValueConvertible, Result: JSONValueConvertible>(
        target: String, action: String, params: Params, as: Result.Type, timeout: Duration? = nil
    ) async throws(MediatorError) -> Result {
        let params = try JSONConversion.validatedParams(params)
        let value = try await call(target, action, writingParams: { params.encodeJSON(into: &$0) }, timeout: timeout)
        return try JSONBridge.result(Result.self, converting: value)
    }

    /// A oneway call with ``JSONValueConvertible`` params (disfavoured as
    /// the `Codable` form).
    @inlinable @_disfavoredOverload
    public func send<Params: JSONValueConvertible>(
        target: String, action: String, params: Params
    ) async throws(MediatorError) {
        try await send(target: target, action: action, params: JSONBridge.objectParams(JSONConversion.validatedParams(params).jsonValue))
    }

    /// A call with several responses, each converted as `Result`
    /// (``JSONValueConvertible``); as the `Codable` form otherwise.
    public func stream<Params: JSONValueConvertible, Result: JSONValueConvertible>(
        target: String, action: String, params: Params, as: Result.Type, timeout: Duration? = nil
    ) -> MediatorStream<Result> {
        MediatorStream(AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    let json = try JSONBridge.objectParams(JSONConversion.validatedParams(params).jsonValue)
                    for try await value in stream(target: target, action: action, params: json, timeout: timeout) {
                        continuation.yield(try JSONBridge.result(Result.self, converting: value))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        })
    }
}

extension CallContext {
    /// Sends a ``JSONValueConvertible`` partial result (`"continues": true`);
    /// ignored unless the caller asked for several responses (`more`).
    public func send<Partial: JSONValueConvertible>(encoding partial: Partial) async throws(MediatorError) {
        await send(partial: partial.jsonValue)
    }
}

extension JSONBridge {
    /// Params that must be a JSON object, or `invalid_params` (nothing is sent).
    @inlinable
    static func objectParams(_ json: JSONValue) throws(MediatorError) -> JSONValue {
        guard case .object = json else {
            throw MediatorError(.invalidParams, "params must encode to a JSON object, not \(json.typeName)")
        }
        return json
    }

    /// A result converted as `Value`, or `invalid_result`.
    @inlinable
    static func result<Value: JSONValueConvertible>(_ type: Value.Type, converting value: JSONValue) throws(MediatorError) -> Value {
        do {
            return try Value(jsonValue: value)
        } catch {
            throw MediatorError(.invalidResult, "the result does not decode as \(Value.self): \(error)")
        }
    }
}
