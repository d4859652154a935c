import CoreMetrics
import MediatorStatistics
import Prometheus

/// The swift-metrics factory the broker's latency timers are made with:
/// swift-prometheus's own, except that the call-duration timers become
/// histograms with the buckets and help text of ``MetricFamilies`` (the
/// stock factory gives every timer the same buckets and no help).
package struct LatencyMetricsFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry
    let prometheus: PrometheusMetricsFactory

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        self.prometheus = PrometheusMetricsFactory(registry: registry)
    }

    package func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        guard label == LatencyHistogram.metricsLabel else { return prometheus.makeTimer(label: label, dimensions: dimensions) }
        return registry.makeDurationHistogram(
            descriptor: MetricFamilies.callDuration, labels: dimensions, buckets: MetricFamilies.durationBuckets)
    }

    package func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        prometheus.makeCounter(label: label, dimensions: dimensions)
    }

    package func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        prometheus.makeFloatingPointCounter(label: label, dimensions: dimensions)
    }

    package func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        prometheus.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }

    package func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        prometheus.makeMeter(label: label, dimensions: dimensions)
    }

    package func destroyCounter(_ handler: any CounterHandler) { prometheus.destroyCounter(handler) }
    package func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        prometheus.destroyFloatingPointCounter(handler)
    }
    package func destroyRecorder(_ handler: any RecorderHandler) { prometheus.destroyRecorder(handler) }
    package func destroyMeter(_ handler: any MeterHandler) { prometheus.destroyMeter(handler) }
    package func destroyTimer(_ handler: any TimerHandler) { prometheus.destroyTimer(handler) }
}
