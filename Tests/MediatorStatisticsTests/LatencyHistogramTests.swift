import Testing

@testable import MediatorStatistics

@Suite struct LatencyHistogramTests {
    @Test func bucketsArePowersOfTwoFromOneMicrosecond() {
        #expect(LatencyHistogram.bucket(nanoseconds: -5) == 0)
        #expect(LatencyHistogram.bucket(nanoseconds: 0) == 0)
        #expect(LatencyHistogram.bucket(nanoseconds: 1024) == 0)
        #expect(LatencyHistogram.bucket(nanoseconds: 1025) == 1)
        #expect(LatencyHistogram.bucket(nanoseconds: 2048) == 1)
        #expect(LatencyHistogram.bucket(nanoseconds: 2049) == 2)
        // 1 ms = 1e6 ns: 2^19 < 1e6 <= 2^20, so bucket 10.
        #expect(LatencyHistogram.bucket(nanoseconds: 1_000_000) == 10)
        // 60 s is in the last bounded bucket (up to 2^36 ns, 68.7 s); longer in the overflow one.
        #expect(LatencyHistogram.bucket(nanoseconds: 60_000_000_000) == 26)
        #expect(LatencyHistogram.bucket(nanoseconds: 100_000_000_000) == 27)
        #expect(LatencyHistogram.bucket(nanoseconds: .max) == 27)
        #expect(LatencyHistogram.upperBound(ofBucket: 0) == 1024)
        #expect(LatencyHistogram.upperBound(ofBucket: 26) == 1 << 36)
        #expect(LatencyHistogram.upperBound(ofBucket: 27) == nil)
    }

    @Test func everyDurationFallsUnderItsBucketsBound() {
        var value: Int64 = 1
        while value < 1 << 36 {
            for probe in [value - 1, value, value + 1] {
                let index = LatencyHistogram.bucket(nanoseconds: probe)
                if let upper = LatencyHistogram.upperBound(ofBucket: index) { #expect(probe <= upper) }
                if index > 0, let lower = LatencyHistogram.upperBound(ofBucket: index - 1) { #expect(probe > lower) }
            }
            value *= 3
        }
    }

    @Test func quantilesFromTheBuckets() throws {
        var histogram = LatencyHistogram()
        #expect(histogram.quantile(0.5) == nil)
        // 98 calls of 1.5 ms (bucket 11: 1.048 to 2.097 ms), 2 of 3 s.
        for _ in 0..<98 { histogram.record(nanoseconds: 1_500_000) }
        for _ in 0..<2 { histogram.record(nanoseconds: 3_000_000_000) }
        #expect(histogram.count == 100)
        #expect(histogram.counts[11] == 98)
        let p50 = try #require(histogram.quantile(0.5))
        #expect(p50 > 1_048_576 && p50 <= 2_097_152)
        let p99 = try #require(histogram.quantile(0.99))
        #expect(p99 > 2_147_483_648 && p99 <= 4_294_967_296)
        #expect(histogram.sumNanoseconds == 98 * 1_500_000 + 2 * 3_000_000_000)
    }

    /// Durations recorded, the fraction asked, the quantile expected (ns).
    static let clampedQuantiles: [(durations: [Int64], fraction: Double, expected: Int64)] = [
        // One call: every quantile is that call, not its bucket's bound (4.19 ms).
        ([2_100_000], 0.5, 2_100_000),
        ([2_100_000], 0.99, 2_100_000),
        ([2_100_000], 0, 2_100_000),
        // The slowest call bounds p99 (its bucket ends at 8.59 s).
        ([1_000_000, 2_000_000, 5_810_000_000], 0.99, 5_810_000_000),
        // Past the last bounded bucket (68.7 s): the longest, not the bucket's lower bound.
        ([100_000_000_000], 0.99, 100_000_000_000),
        ([80_000_000_000, 100_000_000_000], 0.5, 90_000_000_000),
        // Two calls in one bucket (2.10 to 4.19 ms): between the shortest and the longest.
        ([2_200_000, 3_000_000], 0.5, 2_600_000),
        ([2_200_000, 3_000_000], 1, 3_000_000),
        // The shortest is the floor of the first bucket used.
        ([500, 600, 700, 800], 0.25, 575),
        // Zero and negative durations count as 0.
        ([-5, 0], 0.5, 0),
    ]

    @Test("Quantiles interpolate within the bucket, clamped to the shortest and longest recorded",
          arguments: clampedQuantiles)
    func quantilesStayWithinTheRecorded(_ row: (durations: [Int64], fraction: Double, expected: Int64)) throws {
        var histogram = LatencyHistogram()
        for duration in row.durations { histogram.record(nanoseconds: duration) }
        #expect(histogram.quantile(row.fraction) == row.expected)
    }

    @Test func minimumAndMaximumAreTrackedAndMerged() {
        var a = LatencyHistogram()
        #expect(a.minimumNanoseconds == nil && a.maximumNanoseconds == nil)
        a.record(nanoseconds: 3_000)
        a.record(nanoseconds: 1_000)
        var b = LatencyHistogram()
        b.record(nanoseconds: 9_000)
        var empty = LatencyHistogram()
        empty.merge(a)
        a.merge(b)
        #expect(a.minimumNanoseconds == 1_000 && a.maximumNanoseconds == 9_000)
        #expect(empty.minimumNanoseconds == 1_000 && empty.maximumNanoseconds == 3_000)
        #expect(a.quantile(1) == 9_000)
    }

    @Test func mergeAddsCounts() {
        var a = LatencyHistogram()
        var b = LatencyHistogram()
        a.record(nanoseconds: 500)
        b.record(nanoseconds: 500)
        b.record(nanoseconds: 5_000)
        a.merge(b)
        #expect(a.count == 3)
        #expect(a.counts[0] == 2)
        #expect(a.counts[LatencyHistogram.bucket(nanoseconds: 5_000)] == 1)
    }
}
