import Logging
@_spi(NATSBridge) import MediatorClient
import MediatorNATS
import MediatorProtocol
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The remote targets made callable here: what other hosts announce and
/// the import patterns match, within the caps, each registered on the local
/// daemon as a stand-in (a component whose handlers forward over NATS),
/// which the daemon calls only when no local instance is registered.
///
/// Every stand-in is served over one daemon connection
/// (``ComponentConnection``): however much is announced, the bridge takes
/// one connection slot of the daemon for its imports. A registration that
/// fails is tried again with backoff; after a reconnect to the daemon every
/// stand-in is registered again.
final class ImportedTargets: Sendable {
    /// First wait before registering a stand-in again after a failure; it
    /// doubles up to ``maxRetryDelay``.
    static let firstRetryDelay: Duration = .milliseconds(250)
    static let maxRetryDelay: Duration = .seconds(30)

    private let settings: NATSBridgeSettings
    private let logger: Logger
    let connection: ComponentConnection

    /// What another host announced, and when.
    private struct Remote: Sendable {
        var announcement: BridgeMessages.Announcement
        var lastSeen: ContinuousClock.Instant
    }

    /// A target to import, within the caps.
    private struct StandIn: Sendable {
        var target: BridgeMessages.Announcement.Target
        var host: String
        var failures = 0
        var nextAttempt: ContinuousClock.Instant
        /// Registered once at least (its import is logged once).
        var imported = false
    }

    private struct State: Sendable {
        var remotes: [String: Remote] = [:]
        var standIns: [String: StandIn] = [:]
        /// Hosts over their cap now, each logged once per episode.
        var hostsOverCap: Set<String> = []
        var overTotalCap = false
        /// Announced targets left out by a cap now.
        var refused = 0
        var registerFailures = 0
    }

    private let state = Mutex(State())

    init(settings: NATSBridgeSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        self.connection = ComponentConnection(socketPath: settings.socketPath, name: "nats-bridge")
    }

    /// Records another host's announcement; true when its set of targets changed.
    func heard(_ announcement: BridgeMessages.Announcement) -> Bool {
        state.withLock { state -> Bool in
            let before = Set(state.remotes[announcement.host]?.announcement.targets.map(\.name) ?? [])
            if announcement.leaving {
                state.remotes[announcement.host] = nil
                return !before.isEmpty
            }
            state.remotes[announcement.host] = Remote(announcement: announcement, lastSeen: .now)
            return Set(announcement.targets.map(\.name)) != before
        }
    }

    /// When the next registration that failed is due again, if any.
    var nextRetry: ContinuousClock.Instant? {
        state.withLock { state in state.standIns.values.filter { $0.failures > 0 }.map(\.nextAttempt).min() }
    }

    /// What `mediator/stats` shows of the imports (docs/scale-out.md).
    var statistics: [String: JSONValue] {
        let registered = connection.registeredTargets.count
        return state.withLock { state in
            [
                "remote_hosts": .int(Int64(state.remotes.count)),
                "imported": .int(Int64(registered)),
                "importing": .int(Int64(max(0, state.standIns.count - registered))),
                "refused": .int(Int64(state.refused)),
                "register_failures": .int(Int64(state.registerFailures)),
                "max_imports": .int(Int64(settings.maxImports)),
                "max_imports_per_host": .int(Int64(settings.maxImportsPerHost)),
            ]
        }
    }

    /// What to do in one round, decided under the lock.
    private struct Plan {
        var unregister: [String] = []
        var register: [StandIn] = []
        var hostsNewlyOverCap: [(host: String, announced: Int)] = []
        var newlyOverTotalCap: (wanted: Int, kept: Int)?
    }

    /// Brings the stand-ins in line with what is announced now: drops the
    /// hosts not heard for three intervals, applies the caps, unregisters
    /// what is no longer wanted and registers what is due.
    func reconcile(nats: NATSConnection, calls: RemoteCalls) async {
        let expiry = settings.announceInterval * 3
        let now = ContinuousClock.now
        let plan = state.withLock { state -> Plan in
            state.remotes = state.remotes.filter { now - $0.value.lastSeen <= expiry }
            var plan = Plan()
            var refused = 0
            // Each host's matching targets in name order, up to its cap; a
            // target announced by several hosts is imported once.
            var wanted: [String: (target: BridgeMessages.Announcement.Target, host: String)] = [:]
            var overCap: Set<String> = []
            for (host, entry) in state.remotes.sorted(by: { $0.key < $1.key }) {
                var matching: [String: BridgeMessages.Announcement.Target] = [:]
                for target in entry.announcement.targets where TargetPattern.any(settings.imports, match: target.name) {
                    matching[target.name] = matching[target.name] ?? target
                }
                let names = matching.keys.sorted()
                if names.count > settings.maxImportsPerHost {
                    overCap.insert(host)
                    refused += names.count - settings.maxImportsPerHost
                    if !state.hostsOverCap.contains(host) { plan.hostsNewlyOverCap.append((host, names.count)) }
                }
                for name in names.prefix(settings.maxImportsPerHost) where wanted[name] == nil {
                    if let target = matching[name] { wanted[name] = (target, host) }
                }
            }
            state.hostsOverCap = overCap
            // The total cap: those imported already stay, then by name.
            if wanted.count > settings.maxImports {
                let current = Set(state.standIns.keys)
                let kept = Set(wanted.keys.sorted { first, second in
                    let (a, b) = (current.contains(first), current.contains(second))
                    return a != b ? a : first < second
                }.prefix(settings.maxImports))
                if !state.overTotalCap { plan.newlyOverTotalCap = (wanted.count, kept.count) }
                refused += wanted.count - kept.count
                wanted = wanted.filter { kept.contains($0.key) }
                state.overTotalCap = true
            } else {
                state.overTotalCap = false
            }
            state.refused = refused

            // Gone, or now served by another host (its stand-in names the host).
            for (name, standIn) in state.standIns where wanted[name]?.host != standIn.host {
                state.standIns[name] = nil
                plan.unregister.append(name)
            }
            for (name, entry) in wanted where state.standIns[name] == nil {
                state.standIns[name] = StandIn(target: entry.target, host: entry.host, nextAttempt: now)
            }
            plan.register = state.standIns.values.filter { $0.nextAttempt <= now }.sorted { $0.target.name < $1.target.name }
            return plan
        }

        for (host, announced) in plan.hostsNewlyOverCap {
            logger.warning("a host announces more targets to import than the cap per host; the others are refused", metadata: [
                "host": "\(host)", "announced": "\(announced)", "max_imports_per_host": "\(settings.maxImportsPerHost)",
            ])
        }
        if let (wanted, kept) = plan.newlyOverTotalCap {
            logger.warning("more targets to import than the total cap; the others are refused", metadata: [
                "wanted": "\(wanted)", "imported": "\(kept)", "max_imports": "\(settings.maxImports)",
            ])
        }
        for name in plan.unregister {
            await connection.unregister(name)
            logger.info("no longer importing \(name)")
        }
        let registered = connection.registeredTargets
        for standIn in plan.register where !registered.contains(standIn.target.name) {
            await register(standIn, nats: nats, calls: calls)
        }
    }

    private func register(_ standIn: StandIn, nats: NATSConnection, calls: RemoteCalls) async {
        let name = standIn.target.name
        do {
            try await connection.register(Self.standIn(standIn.target, host: standIn.host, nats: nats, calls: calls))
            let first = state.withLock { state -> Bool in
                guard state.standIns[name]?.host == standIn.host else { return false }
                let first = !(state.standIns[name]?.imported ?? true)
                state.standIns[name]?.imported = true
                state.standIns[name]?.failures = 0
                return first
            }
            if first { logger.info("importing \(name) from another host over NATS", metadata: ["host": "\(standIn.host)"]) }
        } catch {
            if !connection.isConnected { return }  // all registered again after the reconnect
            let failures = state.withLock { state -> Int in
                state.registerFailures += 1
                guard state.standIns[name] != nil else { return 0 }
                let failures = standIn.failures + 1
                state.standIns[name]?.failures = failures
                state.standIns[name]?.nextAttempt = .now + Self.retryDelay(afterFailures: failures)
                return failures
            }
            // Said at the first failure; the retries are counted, not logged.
            if failures == 1 {
                logger.warning("cannot import \(name); retrying with backoff", metadata: [
                    "host": "\(standIn.host)", "error": "\(error)",
                ])
            }
        }
    }

    /// 250 ms after the first failure, doubling up to 30 s.
    static func retryDelay(afterFailures failures: Int) -> Duration {
        var delay = firstRetryDelay
        for _ in 1..<max(1, failures) where delay < maxRetryDelay { delay *= 2 }
        return min(delay, maxRetryDelay)
    }

    /// The stand-in for `target`: each action forwards over NATS.
    private static func standIn(
        _ target: BridgeMessages.Announcement.Target, host: String, nats: NATSConnection, calls: RemoteCalls
    ) -> Component {
        var component = Component(
            target: target.name, description: target.description, mode: .pool, handlerExecutor: .concurrent)
        component.remoteHost = host
        let name = target.name
        let ownPID = getpid()
        let forward: @Sendable (CallContext) async throws -> JSONValue = { context in
            // A call from this process is one this host's exporter took from
            // NATS while no local instance was left: sending it back to NATS
            // could bring it here again.
            if context.caller?.pid == ownPID {
                throw MediatorError(.targetNotFound, "\"\(name)\" has no instance on this host")
            }
            return try await calls.forward(name, over: nats, context)
        }
        for spec in target.actions where spec.name != "notFound" {
            component.action(spec.name, description: spec.description, params: spec.params, result: spec.result, url: spec.url, forward)
        }
        if target.actions.contains(where: { $0.name == "notFound" }) {
            component.notFound { action, params, context in
                var context = context
                context.action = action
                context.params = params
                return try await forward(context)
            }
        }
        return component
    }
}
