import MediatorProtocol

/// Every limit the daemon enforces, with its default. Each can come from the
/// JSON config file and from a command-line flag (the flag wins).
package struct DaemonConfiguration: Sendable, Equatable {
    /// Longest frame accepted from a peer, without its LF.
    package var maxFrameBytes = ProtocolConstants.defaultMaxFrameBytes
    /// Connections at once; one more gets an `overloaded` line and is closed.
    package var maxConnections = 4096
    /// Calls a connection may have in flight as a caller.
    package var maxCallsInFlightPerConnection = 1024
    /// Timeout of a call that has no `timeout_ms`.
    package var defaultTimeoutMs: Int64 = ProtocolConstants.defaultTimeoutMs
    /// Bytes queued toward a peer that does not read; past this the peer is
    /// disconnected, so a stalled reader cannot grow the daemon's memory.
    package var maxOutboundBytes = 16 << 20
    /// Consecutive bad frames after which a peer is disconnected.
    package var maxConsecutiveBadFrames = 1000
    /// How long calls in flight may finish after SIGTERM before they are answered.
    package var shutdownGraceMs: Int64 = 2000
    /// Per-uid quotas, as dbus-broker keeps them, so one user cannot starve
    /// the others; uid 0 is exempt.
    package var maxConnectionsPerUID = 512
    package var maxCallsInFlightPerUID = 8192
    package var maxSubscriptionsPerUID = 4096
    package var maxRegistrationsPerUID = 512
    /// Bytes queued toward all of a uid's connections together: past it, calls
    /// to its components are refused and events to it skipped; at twice it,
    /// its connection with the largest backlog is disconnected.
    package var maxQueuedBytesPerUID = 64 << 20
    /// Bytes a uid's calls keep while pending: their ids, and the params of
    /// calls held while a component starts.
    package var maxPendingBytesPerUID = 64 << 20
    /// Bytes one `register` may declare (its params as sent: the action
    /// specs and description), and all of a uid's registrations together:
    /// what `list` and `describe` answer grows with them.
    package var maxRegistrationBytes = 256 << 10
    package var maxRegisteredBytesPerUID = 4 << 20
    /// Descriptors one message may carry (contract section 8: `max_fds` in
    /// `hello`), from ``ProtocolConstants/minimumMaxFds`` to the kernel's
    /// ``ProtocolConstants/maxFdsPerMessageLimit``.
    package var maxFdsPerMessage = ProtocolConstants.maxFdsPerMessageLimit
    /// Descriptors the daemon holds for one uid at once (received and not
    /// yet passed on: held for a starting component, or queued toward a
    /// peer that has not read them); past it, messages with descriptors
    /// from that uid are refused `overloaded`. uid 0 is exempt.
    package var maxFdsInFlightPerUID = 4096
    /// How long a component has, after `mediator.stop`, before it gets SIGTERM.
    package var componentStopGraceMs: Int64 = 3000
    /// Calls answered at least this late go to the slow-call log of `mediator/stats`.
    package var slowCallThresholdMs: Int64 = 1000
    /// After a crash whose connections survived, how long a call to a
    /// target nobody has registered again waits for it before it is
    /// answered `target_not_found` (components take a few hundred ms).
    package var reregisterHoldMs: Int64 = 1000

    package var slowCallThresholdNanoseconds: Int64 {
        slowCallThresholdMs > Int64.max / 1_000_000 ? Int64.max : slowCallThresholdMs * 1_000_000
    }

    /// Enables test-only daemon actions (`_block_event_loop`), never for production.
    package var testHooks = false

    package init() {}

    /// The config file's member names, one per limit.
    package static let keys = [
        "max_frame_bytes", "max_connections", "max_calls_in_flight", "default_timeout_ms",
        "max_outbound_bytes", "max_consecutive_bad_frames", "shutdown_grace_ms", "component_stop_grace_ms",
        "max_connections_per_uid", "max_calls_in_flight_per_uid", "max_subscriptions_per_uid", "max_registrations_per_uid",
        "max_queued_bytes_per_uid", "max_pending_bytes_per_uid", "max_registration_bytes", "max_registered_bytes_per_uid",
        "slow_call_threshold_ms", "max_fds_per_message", "max_fds_in_flight_per_uid", "reregister_hold_ms",
    ]

    /// Applies the members of a JSON config object; unknown members are an error
    /// so that a typo does not silently leave a default in place.
    package mutating func apply(json: JSONValue) throws(MediatorError) {
        guard let members = json.objectValue else { throw MediatorError(.badRequest, "the config must be a JSON object") }
        for (key, value) in members {
            // Read by mediatord itself: where it listens, not how the broker behaves.
            if key == "socket" || key == "metrics_listen" {
                guard value.stringValue != nil else { throw MediatorError(.badRequest, "config member \"\(key)\" must be a string") }
                continue
            }
            // The NATS bridge's settings, read (and checked) by mediatord's launcher.
            if key == "nats" {
                guard value.objectValue != nil else { throw MediatorError(.badRequest, "config member \"nats\" must be an object") }
                continue
            }
            if key == "test_hooks" {
                guard let flag = value.boolValue else { throw MediatorError(.badRequest, "config member \"test_hooks\" must be a boolean") }
                testHooks = flag
                continue
            }
            guard Self.keys.contains(key) else {
                throw MediatorError(.badRequest, "unknown config member \"\(key)\"; known: \(Self.keys.joined(separator: ", "))")
            }
            guard let number = value.intValue, number > 0 else {
                throw MediatorError(.badRequest, "config member \"\(key)\" must be a positive integer")
            }
            try set(key, number)
        }
    }

    package mutating func set(_ key: String, _ number: Int64) throws(MediatorError) {
        switch key {
        case "max_frame_bytes": maxFrameBytes = Int(number)
        case "max_connections": maxConnections = Int(number)
        case "max_calls_in_flight": maxCallsInFlightPerConnection = Int(number)
        case "default_timeout_ms": defaultTimeoutMs = number
        case "max_outbound_bytes": maxOutboundBytes = Int(number)
        case "max_consecutive_bad_frames": maxConsecutiveBadFrames = Int(number)
        case "shutdown_grace_ms": shutdownGraceMs = number
        case "component_stop_grace_ms": componentStopGraceMs = number
        case "max_connections_per_uid": maxConnectionsPerUID = Int(number)
        case "max_calls_in_flight_per_uid": maxCallsInFlightPerUID = Int(number)
        case "max_subscriptions_per_uid": maxSubscriptionsPerUID = Int(number)
        case "max_registrations_per_uid": maxRegistrationsPerUID = Int(number)
        case "max_queued_bytes_per_uid": maxQueuedBytesPerUID = Int(number)
        case "max_pending_bytes_per_uid": maxPendingBytesPerUID = Int(number)
        case "max_registration_bytes": maxRegistrationBytes = Int(number)
        case "max_registered_bytes_per_uid": maxRegisteredBytesPerUID = Int(number)
        case "slow_call_threshold_ms": slowCallThresholdMs = number
        case "reregister_hold_ms": reregisterHoldMs = number
        case "max_fds_per_message":
            let range = Int64(ProtocolConstants.minimumMaxFds)...Int64(ProtocolConstants.maxFdsPerMessageLimit)
            guard range.contains(number) else {
                throw MediatorError(.badRequest, "max_fds_per_message must be from \(range.lowerBound) to \(range.upperBound) (the kernel's limit)")
            }
            maxFdsPerMessage = Int(number)
        case "max_fds_in_flight_per_uid": maxFdsInFlightPerUID = Int(number)
        default: throw MediatorError(.badRequest, "unknown config member \"\(key)\"")
        }
    }
}
