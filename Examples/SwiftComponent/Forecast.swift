/// `forecast`'s result: fake but deterministic, computed from the city
/// name. `ForecastResult` and `Day` are generated from Weather.mediator.json.
extension ForecastResult {
    static let maxDays = 16
    private static let summaries = ["sunny", "partly cloudy", "cloudy", "rain", "showers", "thunderstorms", "snow", "fog", "windy"]

    /// The same city always gets the same weather (FNV-1a of its name, not
    /// `Hasher`, whose seed changes with every run).
    init(city: String, dayCount count: Int) {
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
                high: high,
                low: high - spread,
                precipitation: Int((bits >> 24) % 101),
                summary: Self.summaries[Int((bits >> 16) % UInt64(Self.summaries.count))]))
        }
        self.init(city: city, days: days)
    }
}
