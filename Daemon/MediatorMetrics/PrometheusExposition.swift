import MediatorStatistics
import NIOConcurrencyHelpers
import Prometheus

/// The broker's statistics as Prometheus metrics. Call latencies reach the
/// registry as they happen (the broker's timers, made by ``latencyFactory``);
/// everything else is copied in from a snapshot at each scrape: gauges
/// set, counters advanced by what they grew since the last scrape. So
/// routing pays nothing for the counters when nobody scrapes. The per-uid
/// series live in a registry of their own, so a rendering can leave them
/// out (who is refused, by which quota, is for the monitor grant only).
package final class PrometheusExposition: Sendable {
    package let registry: PrometheusCollectorRegistry
    /// The `mediator_uid_*` families.
    let uidRegistry: PrometheusCollectorRegistry
    /// For the broker's latency timers (`MediatorServer(latencyMetrics:)`).
    package let latencyFactory: LatencyMetricsFactory
    private let published: NIOLockedValueBox<PublishedMetrics>

    package init() {
        registry = PrometheusCollectorRegistry()
        uidRegistry = PrometheusCollectorRegistry()
        latencyFactory = LatencyMetricsFactory(registry: registry)
        published = NIOLockedValueBox(PublishedMetrics())
    }

    /// Brings the registries up to `snapshot` and returns them in the text
    /// format, the per-uid series only with `uidSeries`. Renderings are
    /// serialized, so counters never go backwards. The text is written
    /// once, into an array sized from the last rendering (the registry's
    /// own `emitToBuffer` keeps a copy of its own for good and returns another).
    package func render(_ snapshot: StatisticsSnapshot, uidSeries: Bool) -> [UInt8] {
        published.withLockedValue { published in
            published.update(from: snapshot, in: registry, uids: uidRegistry)
            var bytes: [UInt8] = []
            bytes.reserveCapacity(published.lastRenderBytes + published.lastRenderBytes / 8 + 4096)
            registry.emit(into: &bytes)
            if uidSeries { uidRegistry.emit(into: &bytes) }
            published.lastRenderBytes = max(published.lastRenderBytes, bytes.count)
            return bytes
        }
    }

    /// Everything, the per-uid series included.
    package func scrape(_ snapshot: StatisticsSnapshot) -> [UInt8] { render(snapshot, uidSeries: true) }
}

/// The handles made so far and the counter values last published.
struct PublishedMetrics {
    typealias Labels = [(String, String)]

    struct Key: Hashable {
        var name: String
        var labelValues: [String]
    }

    private var counters: [Key: (counter: Counter, value: Int)] = [:]
    private var gauges: [Key: Gauge] = [:]
    /// Gauges set by the current update; the others read zero (a uid gone, nothing held).
    private var gaugesSet: Set<Key> = []
    /// The largest rendering so far, to size the next one at once.
    var lastRenderBytes = 0

    mutating func update(
        from snapshot: StatisticsSnapshot, in registry: PrometheusCollectorRegistry, uids uidRegistry: PrometheusCollectorRegistry
    ) {
        gaugesSet.removeAll(keepingCapacity: true)
        let statistics = snapshot.statistics
        let live = snapshot.live
        for (slot, action) in statistics.actions.enumerated() {
            let labels = [("target", action.target), ("action", action.action)]
            count(MetricFamilies.callsRouted, labels, action.calls, registry)
            count(MetricFamilies.calls, labels + [("code", "ok")], action.ok, registry)
            for (code, answers) in action.errors { count(MetricFamilies.calls, labels + [("code", code)], answers, registry) }
            count(MetricFamilies.callTimeouts, labels, action.timeouts, registry)
            count(MetricFamilies.callCancels, labels, action.cancels, registry)
            count(MetricFamilies.callsCallerGone, labels, action.callerGone, registry)
            count(MetricFamilies.streams, labels, action.streams, registry)
            count(MetricFamilies.streamPartials, labels, action.partials, registry)
            set(MetricFamilies.callsInFlight, labels, Double(live.inFlightBySlot[slot] ?? 0), registry)
        }
        for (target, held) in live.heldByTarget { set(MetricFamilies.callsHeld, [("target", target)], Double(held), registry) }
        for (target, component) in statistics.components {
            let labels = [("target", target)]
            count(MetricFamilies.componentActivations, labels, component.activations, registry)
            for (reason, failures) in component.startFailures {
                count(MetricFamilies.componentStartFailures, labels + [("reason", reason.rawValue)], failures, registry)
            }
            count(MetricFamilies.componentRestarts, labels, component.restarts, registry)
            count(MetricFamilies.componentIdleExits, labels, component.idleExits, registry)
        }
        for uid in Set(statistics.uids.keys).union(live.uids.keys) {
            let labels = [("uid", String(uid))]
            let counted = statistics.uids[uid] ?? UIDCounters()
            let now = live.uids[uid] ?? LiveFigures.UID()
            set(MetricFamilies.uidConnections, labels, Double(now.connections), uidRegistry)
            set(MetricFamilies.uidCallsInFlight, labels, Double(now.callsInFlight), uidRegistry)
            set(MetricFamilies.uidQueuedBytes, labels, Double(now.queuedBytes), uidRegistry)
            set(MetricFamilies.uidFdsInFlight, labels, Double(now.fdsInFlight), uidRegistry)
            count(MetricFamilies.uidConnectionsOpened, labels, counted.connectionsOpened, uidRegistry)
            count(MetricFamilies.uidPolicyDenials, labels, counted.policyDenials, uidRegistry)
            for (quota, refusals) in counted.quotaRefusals {
                count(MetricFamilies.uidQuotaRefusals, labels + [("quota", quota)], refusals, uidRegistry)
            }
        }
        let daemon = statistics.daemon
        set(MetricFamilies.uptime, [], Double(live.uptimeNanoseconds) / 1e9, registry)
        set(MetricFamilies.connections, [], Double(live.connections), registry)
        set(MetricFamilies.registeredTargets, [], Double(live.registeredTargets), registry)
        set(MetricFamilies.subscriptions, [], Double(live.subscriptions), registry)
        count(MetricFamilies.connectionsOpened, [], daemon.connectionsOpened, registry)
        count(MetricFamilies.connectionsRefused, [], daemon.connectionsRefused, registry)
        count(MetricFamilies.registrations, [], daemon.registrations, registry)
        count(MetricFamilies.subscriptionsAdded, [], daemon.subscriptions, registry)
        count(MetricFamilies.policyDenials, [], daemon.policyDenials, registry)
        count(MetricFamilies.badFrames, [], daemon.badFrames, registry)
        count(MetricFamilies.backlogDisconnects, [], daemon.backlogDisconnects, registry)
        count(MetricFamilies.slowCalls, [], statistics.slowCalls.total, registry)
        count(MetricFamilies.fdsReceived, [], live.descriptors.received, registry)
        count(MetricFamilies.fdsPassed, [], live.descriptors.passed, registry)
        count(MetricFamilies.fdsReleased, [], live.descriptors.released, registry)
        set(MetricFamilies.fdsInFlight, [], Double(live.descriptors.inFlight), registry)
        for (key, gauge) in gauges where !gaugesSet.contains(key) { gauge.set(to: 0) }
    }

    /// Advances a counter to `value`; the broker's counters only grow.
    private mutating func count(_ family: MetricNameDescriptor, _ labels: Labels, _ value: Int, _ registry: PrometheusCollectorRegistry) {
        let key = Key(name: family.name, labelValues: labels.map(\.1))
        if let published = counters[key] {
            guard value > published.value else { return }
            published.counter.increment(by: Int64(value - published.value))
            counters[key]?.value = value
            return
        }
        let counter = labels.isEmpty
            ? registry.makeCounter(descriptor: family) : registry.makeCounter(descriptor: family, labels: labels)
        if value > 0 { counter.increment(by: Int64(value)) }
        counters[key] = (counter, max(0, value))
    }

    private mutating func set(_ family: MetricNameDescriptor, _ labels: Labels, _ value: Double, _ registry: PrometheusCollectorRegistry) {
        let key = Key(name: family.name, labelValues: labels.map(\.1))
        gaugesSet.insert(key)
        if let gauge = gauges[key] {
            gauge.set(to: value)
            return
        }
        let gauge = labels.isEmpty
            ? registry.makeGauge(descriptor: family) : registry.makeGauge(descriptor: family, labels: labels)
        gauge.set(to: value)
        gauges[key] = gauge
    }
}
