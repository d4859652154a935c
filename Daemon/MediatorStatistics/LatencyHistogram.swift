/// Latencies in fixed log-spaced buckets: bucket `i` holds durations up to
/// `1024 << i` nanoseconds (about 1 µs, 2 µs, 4 µs, ... 68.7 s), the last
/// one everything longer. Powers of two, so a duration's bucket is a
/// leading-zero count: no search, no floating point, on the routing path.
package struct LatencyHistogram: Sendable, Equatable {
    /// 27 bounded buckets (1.02 µs to 68.7 s) and one for longer.
    static let bucketCount = 28
    /// The first bucket's upper bound is 2^10 ns.
    static let firstBoundShift = 10

    package private(set) var counts: [Int]
    package private(set) var count = 0
    private(set) var sumNanoseconds: Int64 = 0
    /// The shortest and longest durations recorded (negative ones as 0); nil
    /// before the first. Quantiles stay within them: a bucket's bounds alone
    /// can be off by a factor of two (a single 2.1 ms call read as 4.19 ms).
    private(set) var minimumNanoseconds: Int64?
    private(set) var maximumNanoseconds: Int64?

    package init() { counts = Array(repeating: 0, count: Self.bucketCount) }

    /// The bucket a duration falls in; a negative or zero duration in the first.
    @inline(__always)
    package static func bucket(nanoseconds: Int64) -> Int {
        guard nanoseconds > 1 else { return 0 }
        let scaled = UInt64(nanoseconds - 1) >> UInt64(firstBoundShift)
        return min(UInt64.bitWidth - scaled.leadingZeroBitCount, bucketCount - 1)
    }

    /// The largest duration bucket `index` holds; nil for the last (unbounded) one.
    package static func upperBound(ofBucket index: Int) -> Int64? {
        index < bucketCount - 1 ? Int64(1) << Int64(firstBoundShift + index) : nil
    }

    package mutating func record(nanoseconds: Int64) {
        counts[Self.bucket(nanoseconds: nanoseconds)] += 1
        count += 1
        let duration = max(0, nanoseconds)
        sumNanoseconds &+= duration
        minimumNanoseconds = min(minimumNanoseconds ?? duration, duration)
        maximumNanoseconds = max(maximumNanoseconds ?? duration, duration)
    }

    /// The duration below which `fraction` of the recorded ones fall,
    /// interpolated linearly inside its bucket, whose bounds are first
    /// narrowed to the shortest and longest durations recorded: so never
    /// outside them, a single duration's quantiles are that duration, and the
    /// last (unbounded) bucket ends at the longest. Otherwise off by at most
    /// the bucket's width, a factor of two. nil when nothing was recorded.
    package func quantile(_ fraction: Double) -> Int64? {
        guard count > 0, let minimum = minimumNanoseconds, let maximum = maximumNanoseconds else { return nil }
        let rank = max(1, Int((Double(count) * min(max(fraction, 0), 1)).rounded(.up)))
        var seen = 0
        for (index, bucketCount) in counts.enumerated() where bucketCount > 0 {
            if seen + bucketCount >= rank {
                let bucketLower = index == 0 ? 0 : Int64(1) << Int64(Self.firstBoundShift + index - 1)
                let lower = min(max(bucketLower, minimum), maximum)
                let upper = max(min(Self.upperBound(ofBucket: index) ?? maximum, maximum), lower)
                let position = Double(rank - seen) / Double(bucketCount)
                return lower + Int64((Double(upper - lower) * position).rounded())
            }
            seen += bucketCount
        }
        return nil
    }
}

extension LatencyHistogram {
    /// Adds another histogram's counts (a target's, from its actions').
    package mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] += other.counts[index] }
        count += other.count
        sumNanoseconds &+= other.sumNanoseconds
        if let otherMinimum = other.minimumNanoseconds {
            minimumNanoseconds = min(minimumNanoseconds ?? otherMinimum, otherMinimum)
        }
        if let otherMaximum = other.maximumNanoseconds {
            maximumNanoseconds = max(maximumNanoseconds ?? otherMaximum, otherMaximum)
        }
    }
}

extension LatencyHistogram {
    /// The swift-metrics label of the per-call latency timers the broker
    /// feeds when asked (mediatord --metrics-listen), which the Prometheus
    /// exporter publishes under the same name.
    package static let metricsLabel = "mediator_call_duration_seconds"
}
