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

    @inline(__always)
    func record(slot: Int, of statistics: BrokerStatistics, nanoseconds: Int64) {
        if slot < timers.count, let timer = timers[slot] {
            timer.recordNanoseconds(nanoseconds)
            return
        }
        makeTimer(slot: slot, of: statistics).recordNanoseconds(nanoseconds)
    }

    private func makeTimer(slot: Int, of statistics: BrokerStatistics) -> CoreMetrics.Timer {
        if timers.count <= slot { timers.append(contentsOf: repeatElement(nil, count: slot + 1 - timers.count)) }
        let counters = statistics.actions[slot]
        let timer = CoreMetrics.Timer(
            label: Self.label, dimensions: [("target", counters.target), ("action", counters.action)], factory: factory)
        timers[slot] = timer
        return timer
    }
}
