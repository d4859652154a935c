import MediatorClient
import MediatorProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The example component's actions: an implementation of the protocol
/// `WeatherService`, which the MediatorGenerator plugin generates (with the
/// params and result types, and `Component(serving:)`) from
/// `Weather.mediator.json` at build time. No schema is written here: the
/// component registers the interface file's specs exactly, and the daemon
/// checks calls and results against them.
struct WeatherServer: WeatherService {
    /// A component serving the interface as `target` (another name than
    /// Weather runs a second instance of the same interface).
    static func component(target: String, mode: Component.Mode) throws(MediatorError) -> Component {
        try Component(serving: WeatherServer(), target: target, mode: mode)
    }

    func forecast(_ params: ForecastParams, context: CallContext) async throws -> ForecastResult {
        let days = params.days ?? 3
        // In the schema but out of range: the schema has no bounds, so the handler checks.
        guard (1...ForecastResult.maxDays).contains(days) else {
            throw MediatorError(.invalidParams, "params.days: expected 1 to \(ForecastResult.maxDays), got \(days)")
        }
        return ForecastResult(city: params.city, dayCount: days)
    }

    func echo(_ params: EchoParams, context: CallContext) async throws -> EchoResult {
        ["params": params, "caller": Self.callerJSON(context.caller)]
    }

    /// Partials are integers and the final answer `{"done": true}`: the
    /// result type is free-form (`JSONValue`), the schema (`["integer",
    /// "object"]`) holds both.
    func countdown(_ params: CountdownParams, context: CallContext) async throws -> CountdownResult {
        let interval = params.intervalMs ?? 0
        guard (0...100_000).contains(params.from) else {
            throw MediatorError(.invalidParams, "params.from: expected 0 to 100000, got \(params.from)")
        }
        var next = params.from
        while next >= 1 {
            try Task.checkCancellation()
            try await sendCountdownPartial(.int(Int64(next)), context: context)
            next -= 1
            if interval > 0 && next >= 1 { try await Task.sleep(for: .milliseconds(interval)) }
        }
        return ["done": true]
    }

    func slow(_ params: SlowParams, context: CallContext) async throws -> SlowResult {
        let ms = max(params.ms, 0)
        try await Task.sleep(for: .milliseconds(ms))
        return SlowResult(slept: ms)
    }

    func crash(_ params: CrashParams, context: CallContext) async throws -> CrashResult {
        exit(3)
    }

    /// The declared fallback: the daemon sends `{action, params}` for every
    /// action the interface does not declare.
    func notFound(_ params: NotFoundParams, context: CallContext) async throws -> NotFoundResult {
        NotFoundResult(fallback: params.action, params: params.params ?? [:])
    }

    static func callerJSON(_ caller: Caller?) -> JSONValue {
        guard let caller else { return .null }
        var members: [String: JSONValue] = [
            "pid": .int(Int64(caller.pid)), "uid": .int(Int64(caller.uid)), "gid": .int(Int64(caller.gid)),
        ]
        if let name = caller.name { members["name"] = .string(name) }
        // A call from another host through the NATS bridge says who made it there.
        if let remote = caller.remote {
            var there: [String: JSONValue] = [
                "host": .string(remote.host), "uid": .int(Int64(remote.uid)), "pid": .int(Int64(remote.pid)),
            ]
            if let name = remote.name { there["name"] = .string(name) }
            members["remote"] = .object(there)
        }
        return .object(members)
    }
}
