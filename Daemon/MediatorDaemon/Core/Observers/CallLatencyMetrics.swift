import CoreMetrics
import MediatorStatistics

/// Each call's latency handed to swift-metrics as it is answered, when an
/// exporter asked for it (mediatord --metrics-listen); the broker has none
/// otherwise. Only latency is recorded per call: a histogram cannot be
/// rebuilt from counters, everything else an exporter reads from a
/// statistics snapshot when it is scraped.
final class CallLatencyMetrics {
    /// The swift-metrics label, which a Prometheus factory uses as the metric's name.
    static let label = LatencyHistogram.metricsLabel

    let factory: any MetricsFactory
    /// One timer per statistics slot, made on the slot's first answer.
    private var timers: [CoreMetrics.Timer?] = []

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    /// False when the slot has no timer yet: then ``makeTimer(slot:target:action:)``.
    @inline(__always)
    func record(slot: Int, nanoseconds: Int64) -> Bool {
        guard slot < timers.count, let timer = timers[slot] else { return false }
        timer.recordNanoseconds(nanoseconds)
        return true
    }

    /// The timer of a statistics entry, named as the entry is (`*`/`*` for the overflow entry).
    func makeTimer(slot: Int, target: String, action: String) -> CoreMetrics.Timer {
        if timers.count <= slot { timers.append(contentsOf: repeatElement(nil, count: slot + 1 - timers.count)) }
        let timer = CoreMetrics.Timer(label: Self.label, dimensions: [("target", target), ("action", action)], factory: factory)
        timers[slot] = timer
        return timer
    }
}
