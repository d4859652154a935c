import MediatorClient
import MediatorProtocol
import MediatorTesting
import Testing

@testable import example_component

/// The example component of Examples/SwiftComponent, tested as its author
/// would: its own code served on a test daemon, called through the
/// generated client, no mediatord running.
@Suite struct WeatherExampleTests {
    static func serveWeather<Result: Sendable>(
        _ body: (MediatorTestDaemon) async throws -> Result
    ) async throws -> Result {
        try await withTestDaemon { daemon in
            try await daemon.serving(WeatherServer.component(target: "Weather", mode: .exclusive)) {
                try await body(daemon)
            }
        }
    }

    @Test func forecastThroughTheGeneratedClient() async throws {
        try await Self.serveWeather { daemon in
            try await daemon.withClient(name: "weather-test") { client in
                let forecast = try await WeatherClient(client).forecast(ForecastParams(city: "Oslo", days: 2))
                #expect(forecast == ForecastResult(city: "Oslo", dayCount: 2))
                #expect(forecast.days.count == 2)
            }
        }
    }

    @Test func countdownStreamsEachNumber() async throws {
        try await Self.serveWeather { daemon in
            try await daemon.withClient { client in
                // Each partial, then the final answer {"done": true}.
                var values: [JSONValue] = []
                for try await value in WeatherClient(client).countdown(CountdownParams(from: 3, intervalMs: 1)) {
                    values.append(value)
                }
                #expect(values == [3, 2, 1, ["done": true]])
            }
        }
    }

    /// The daemon's schema check refuses a call without `city` before the
    /// component sees it.
    @Test func theDaemonRefusesParamsOutsideTheSchema() async throws {
        try await Self.serveWeather { daemon in
            try await daemon.withClient { client in
                let error = await #expect(throws: MediatorError.self) {
                    try await client.call(target: "Weather", action: "forecast", params: ["days": 2])
                }
                #expect(error?.code == .invalidParams)
                #expect(error?.message.contains("city") == true)
            }
        }
    }

    /// In the schema but out of the handler's range: the handler's own error.
    @Test func theHandlerRefusesTooManyDays() async throws {
        try await Self.serveWeather { daemon in
            try await daemon.withClient { client in
                let error = await #expect(throws: MediatorError.self) {
                    try await WeatherClient(client).forecast(ForecastParams(city: "Oslo", days: 99))
                }
                #expect(error?.code == .invalidParams)
            }
        }
    }
}
