import MediatorProtocol

/// `forecast`'s params.
struct ForecastRequest: Codable, Sendable {
    var city: String
    var days: Int?
}

/// `forecast`'s result: fake but deterministic, computed from the city name.
struct Forecast: Codable, Sendable, Equatable {
    struct Day: Codable, Sendable, Equatable {
        var day: Int
        var summary: String
        var high: Int
        var low: Int
        var precipitation: Int
    }

    var city: String
    var days: [Day]

    static let maxDays = 16
    private static let summaries = ["sunny", "partly cloudy", "cloudy", "rain", "showers", "thunderstorms", "snow", "fog", "windy"]

    /// The same city always gets the same weather (FNV-1a of its name, not
    /// `Hasher`, whose seed changes with every run).
    init(city: String, days count: Int) {
        var seed: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in city.utf8 {
            seed ^= UInt64(byte)
            seed &*= 0x100_0000_01b3
        }
        var days: [Day] = []
        for day in 1...max(count, 1) {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let bits = seed >> 33
            let high = Int(bits % 35) - 5
            let spread = 3 + Int((bits >> 8) % 10)
            days.append(Day(
                day: day,
                summary: Self.summaries[Int((bits >> 16) % UInt64(Self.summaries.count))],
                high: high,
                low: high - spread,
                precipitation: Int((bits >> 24) % 101)))
        }
        self.city = city
        self.days = days
    }

    /// The declared params schema: the daemon refuses calls that do not match.
    static let paramsSchema: Schema = try! Schema(json: [
        "type": "object",
        "properties": [
            "city": ["type": "string", "description": "The city's name."],
            "days": ["type": "integer", "description": "How many days, 1 to 16 (default 3)."],
        ],
        "required": ["city"],
    ])

    static let resultSchema: Schema = try! Schema(json: [
        "type": "object",
        "properties": [
            "city": ["type": "string"],
            "days": [
                "type": "array",
                "items": [
                    "type": "object",
                    "properties": [
                        "day": ["type": "integer"],
                        "summary": ["type": "string"],
                        "high": ["type": "integer"],
                        "low": ["type": "integer"],
                        "precipitation": ["type": "integer"],
                    ],
                ],
            ],
        ],
    ])
}
