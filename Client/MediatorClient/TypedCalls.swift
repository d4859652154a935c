import Foundation
import MediatorProtocol

extension MediatorClient {
    /// A call with `Encodable` params and a `Decodable` result, through
    /// Foundation's JSON coders.
    ///
    /// - Throws: `invalid_params` (locally, nothing sent) when `params` does
    ///   not encode to a JSON object; ``ErrorCode/invalidResult`` when the
    ///   result does not decode as `Result`; else as
    ///   ``call(_:_:params:timeout:)``.
    public func call<Params: Encodable & Sendable, Result: Decodable & Sendable>(
        _ target: String, _ action: String, _ params: Params, as: Result.Type, timeout: Duration? = nil
    ) async throws(MediatorError) -> Result {
        let json: JSONValue
        do {
            json = try JSONBridge.value(from: params)
        } catch {
            throw MediatorError(.invalidParams, "params do not encode as JSON: \(error)")
        }
        guard case .object = json else {
            throw MediatorError(.invalidParams, "params must encode to a JSON object, not \(json.typeName)")
        }
        let value = try await call(target, action, params: json, timeout: timeout)
        do {
            return try JSONBridge.decode(Result.self, from: value)
        } catch {
            throw MediatorError(.invalidResult, "the result does not decode as \(Result.self): \(error)")
        }
    }
}

/// Converts between `Codable` values and ``JSONValue`` through JSON bytes.
enum JSONBridge {
    static func value(from encodable: some Encodable) throws -> JSONValue {
        let data = try JSONEncoder().encode(encodable)
        return try JSONParser.parse(data)
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from value: JSONValue) throws -> Value {
        try JSONDecoder().decode(type, from: Data(value.encoded))
    }
}
