import MediatorClient
import MediatorProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The example component's actions.
enum Weather {
    static func component(target: String, mode: Component.Mode) -> Component {
        var component = Component(target: target, description: "Fake weather, and a few actions for tests.", mode: mode)

        component.action(
            "forecast", description: "A forecast for a city: {city, days?} → {city, days: [...]}",
            params: Forecast.paramsSchema, result: Forecast.resultSchema
        ) { (request: ForecastRequest, _: CallContext) async throws -> Forecast in
            let days = request.days ?? 3
            guard (1...Forecast.maxDays).contains(days) else {
                throw MediatorError(.invalidParams, "params.days: expected 1 to \(Forecast.maxDays), got \(days)")
            }
            return Forecast(city: request.city, days: days)
        }

        component.action("echo", description: "Returns {params, caller}.") { context in
            ["params": context.params, "caller": callerJSON(context.caller)]
        }

        component.action(
            "countdown", description: "{from: n} sends n, n-1, ..., 1 as partial results, then {done: true}.",
            params: try! Schema(json: [
                "type": "object",
                "properties": ["from": ["type": "integer"], "interval_ms": ["type": "integer"]],
                "required": ["from"],
            ])
        ) { context in
            let from = context.params["from"]?.intValue ?? 0
            let interval = context.params["interval_ms"]?.intValue ?? 0
            guard (0...100_000).contains(from) else {
                throw MediatorError(.invalidParams, "params.from: expected 0 to 100000, got \(from)")
            }
            var next = from
            while next >= 1 {
                try Task.checkCancellation()
                await context.send(partial: .int(next))
                next -= 1
                if interval > 0 && next >= 1 { try await Task.sleep(for: .milliseconds(interval)) }
            }
            return ["done": true]
        }

        component.action(
            "slow", description: "{ms: n}: sleeps n ms (cancellable), then returns {slept: n}.",
            params: try! Schema(json: [
                "type": "object", "properties": ["ms": ["type": "integer"]], "required": ["ms"],
            ])
        ) { context in
            let ms = max(context.params["ms"]?.intValue ?? 0, 0)
            try await Task.sleep(for: .milliseconds(ms))
            return ["slept": .int(ms)]
        }

        component.action("crash", description: "Exits the process at once, without replying (for tests).") { _ in
            exit(3)
        }

        component.notFound { action, params, _ in
            ["fallback": .string(action), "params": params]
        }
        return component
    }

    static func callerJSON(_ caller: Caller?) -> JSONValue {
        guard let caller else { return .null }
        var members: [String: JSONValue] = [
            "pid": .int(Int64(caller.pid)), "uid": .int(Int64(caller.uid)), "gid": .int(Int64(caller.gid)),
        ]
        if let name = caller.name { members["name"] = .string(name) }
        return .object(members)
    }
}
