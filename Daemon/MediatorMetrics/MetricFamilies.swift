import Prometheus

/// Every metric the daemon exports: names, kinds and help texts in one
/// table, which docs/daemon.md ("Prometheus metrics") mirrors. Names follow
/// Prometheus conventions: a `mediator_` prefix, base units, counters
/// ending in `_total`.
/// (Computed: swift-prometheus's descriptor is not Sendable.)
enum MetricFamilies {
    private static func named(_ name: String, unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "mediator", metricName: name, unitName: unit, helpText: help)
    }

    // Per target and action (labels target, action).
    static var calls: MetricNameDescriptor { named("calls", unit: "total", "Calls answered, by final code: ok for a result, else the error code.") }
    static var callsRouted: MetricNameDescriptor { named("calls_routed", unit: "total", "Calls forwarded to a component.") }
    static var callTimeouts: MetricNameDescriptor { named("call_timeouts", unit: "total", "Calls that reached their timeout.") }
    static var callCancels: MetricNameDescriptor { named("call_cancels", unit: "total", "Calls their caller cancelled.") }
    static var callsCallerGone: MetricNameDescriptor { named("calls_caller_gone", unit: "total", "Calls whose caller disconnected before the final answer.") }
    static var streams: MetricNameDescriptor { named("streams", unit: "total", "Calls that asked for partial results (more).") }
    static var streamPartials: MetricNameDescriptor { named("stream_partials", unit: "total", "Partial results passed on to callers.") }
    static var callsInFlight: MetricNameDescriptor { named("calls_in_flight", unit: "", "Calls forwarded and not yet answered.") }
    /// Recorded per call through swift-metrics (the broker's timers), not from snapshots.
    static var callDuration: MetricNameDescriptor { named("call_duration", unit: "seconds", "Time from forwarding a call to its final answer.") }

    // Per target (label target).
    static var callsHeld: MetricNameDescriptor { named("calls_held", unit: "", "Calls waiting for their component to be started.") }
    static var componentActivations: MetricNameDescriptor { named("component_activations", unit: "total", "Starts of a managed component.") }
    static var componentStartFailures: MetricNameDescriptor { named("component_start_failures", unit: "total", "Starts that did not end in a registration, by reason.") }
    static var componentRestarts: MetricNameDescriptor { named("component_restarts", unit: "total", "Replacements of a managed component after it ended.") }
    static var componentIdleExits: MetricNameDescriptor { named("component_idle_exits", unit: "total", "Stops of a managed component for being idle.") }

    // Per uid (label uid).
    static var uidConnections: MetricNameDescriptor { named("uid_connections", unit: "", "Open connections of a uid.") }
    static var uidConnectionsOpened: MetricNameDescriptor { named("uid_connections_opened", unit: "total", "Connections a uid opened.") }
    static var uidCallsInFlight: MetricNameDescriptor { named("uid_calls_in_flight", unit: "", "Calls in flight made by a uid's connections.") }
    static var uidQueuedBytes: MetricNameDescriptor { named("uid_queued", unit: "bytes", "Bytes queued toward a uid's connections and not yet taken by them.") }
    static var uidQuotaRefusals: MetricNameDescriptor { named("uid_quota_refusals", unit: "total", "Requests of a uid refused by a quota, by quota.") }
    static var uidPolicyDenials: MetricNameDescriptor { named("uid_policy_denials", unit: "total", "Requests of a uid denied by the access policy.") }
    static var uidFdsInFlight: MetricNameDescriptor { named("uid_fds_in_flight", unit: "", "File descriptors a uid sent that the daemon holds now.") }

    // The daemon (no labels).
    static var uptime: MetricNameDescriptor { named("uptime", unit: "seconds", "Time since the daemon started.") }
    static var connections: MetricNameDescriptor { named("connections", unit: "", "Open connections.") }
    static var connectionsOpened: MetricNameDescriptor { named("connections_opened", unit: "total", "Connections accepted.") }
    static var connectionsRefused: MetricNameDescriptor { named("connections_refused", unit: "total", "Connections refused by a limit.") }
    static var registeredTargets: MetricNameDescriptor { named("registered_targets", unit: "", "Targets registered now.") }
    static var registrations: MetricNameDescriptor { named("registrations", unit: "total", "Successful register requests.") }
    static var subscriptions: MetricNameDescriptor { named("subscriptions", unit: "", "Event patterns subscribed now.") }
    static var subscriptionsAdded: MetricNameDescriptor { named("subscriptions_added", unit: "total", "Event patterns added by subscribe.") }
    static var policyDenials: MetricNameDescriptor { named("policy_denials", unit: "total", "Requests denied by the access policy.") }
    static var badFrames: MetricNameDescriptor { named("bad_frames", unit: "total", "Lines that were not a valid message.") }
    static var backlogDisconnects: MetricNameDescriptor { named("backlog_disconnects", unit: "total", "Connections closed because too much was queued toward them.") }
    static var fdsReceived: MetricNameDescriptor { named("fds_received", unit: "total", "File descriptors received with messages.") }
    static var fdsPassed: MetricNameDescriptor { named("fds_passed", unit: "total", "File descriptors written on to their receiver.") }
    static var fdsReleased: MetricNameDescriptor { named("fds_released", unit: "total", "File descriptors closed undelivered (refused, or their call or receiver gone).") }
    static var fdsInFlight: MetricNameDescriptor { named("fds_in_flight", unit: "", "File descriptors the daemon holds now.") }
    static var slowCalls: MetricNameDescriptor { named("slow_calls", unit: "total", "Calls answered later than the slow-call threshold.") }

    /// Latency buckets: local calls take tens of microseconds, a component's
    /// own work up to seconds; 30 s is near the default call timeout.
    static let durationBuckets: [Duration] = [
        .microseconds(25), .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500),
        .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30),
    ]
}
