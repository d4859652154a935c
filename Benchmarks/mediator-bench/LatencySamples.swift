/// The sequential shapes' round trips, kept as they come and summarised
/// once at the end from the sorted samples (exact percentiles).
///
/// Why not the HdrHistogram there: its `record`, unspecialised across the
/// module boundary, cost some 1,500 instructions per call under callgrind,
/// and the library client's figure (docs/benchmark.md, issue 26) is the
/// whole process's instructions per call. An append is a few instructions;
/// the sort at the end is some 150 per call at 5,000 calls. The histogram
/// stays where calls are not bounded in number (the 16-connection shape).
struct LatencySamples {
    private var nanos: [UInt64] = []

    /// Room for `expected` samples up front (at most 4 Mi of them; more
    /// grow the array), so that recording does not allocate.
    init(expected: Int) {
        nanos.reserveCapacity(min(max(expected, 0), 1 << 22))
    }

    mutating func record(_ value: UInt64) {
        nanos.append(value)
    }

    /// The summary in microseconds; nil without samples.
    func summary() -> LatencySummary? {
        guard !nanos.isEmpty else { return nil }
        let sorted = nanos.sorted()
        // Nearest rank: the smallest value with `percentile` of the samples at or below it.
        func micros(_ percentile: Double) -> Double {
            let rank = Int((percentile / 100 * Double(sorted.count)).rounded(.up))
            return Double(sorted[min(max(rank, 1), sorted.count) - 1]) / 1000
        }
        let total = sorted.reduce(0.0) { $0 + Double($1) }
        return LatencySummary(
            p50: micros(50), p90: micros(90), p99: micros(99), p999: micros(99.9),
            max: Double(sorted[sorted.count - 1]) / 1000, mean: total / Double(sorted.count) / 1000)
    }
}

extension LatencySummary {
    init(p50: Double, p90: Double, p99: Double, p999: Double, max: Double, mean: Double) {
        self.p50 = p50
        self.p90 = p90
        self.p99 = p99
        self.p999 = p999
        self.max = max
        self.mean = mean
    }
}
