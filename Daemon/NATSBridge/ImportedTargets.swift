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
    /// Other hosts kept track of at once: announcements from more are
    /// ignored (logged once, counted), so that a flood of host names cannot
    /// grow the bridge's memory.
    static let maxRemoteHosts = 1024

    private let settings: NATSBridgeSettings
    private let logger: Logger
    let connection: ComponentConnection

    /// What another host announced, and when: only the targets that could
    /// be imported (matching an import pattern, within the cap per host, in
    /// name order), and how many matched.
    private struct Remote: Sendable {
        var targets: [BridgeMessages.Announcement.Target]
        var matching: Int
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
        /// Announcements ignored because ``maxRemoteHosts`` hosts are known.
        var announcementsRefused = 0
        var overHostsCap = false
    }

    private let state = Mutex(State())

    init(settings: NATSBridgeSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        self.connection = ComponentConnection(
            socketPath: settings.socketPath, name: "nats-bridge", acceptsDescriptors: true)
    }

    /// Records another host's announcement; true when its set of targets changed.
    func heard(_ announcement: BridgeMessages.Announcement) -> Bool {
        var matching: [String: BridgeMessages.Announcement.Target] = [:]
        for target in announcement.targets where TargetPattern.any(settings.imports, match: target.name) {
            matching[target.name] = matching[target.name] ?? target
        }
        let kept = matching.keys.sorted().prefix(settings.maxImportsPerHost).compactMap { matching[$0] }
        let host = announcement.host
        let (changed, hostsCapReached) = state.withLock { state -> (Bool, Bool) in
            let before = state.remotes[host].map { Set($0.targets.map(\.name)) }
            // A host with nothing to import here takes no place.
            if announcement.leaving || kept.isEmpty {
                state.remotes[host] = nil
                return (!(before?.isEmpty ?? true), false)
            }
            if before == nil, state.remotes.count >= Self.maxRemoteHosts {
                state.announcementsRefused += 1
                defer { state.overHostsCap = true }
                return (false, !state.overHostsCap)
            }
            state.remotes[host] = Remote(targets: kept, matching: matching.count, lastSeen: .now)
            return (Set(kept.map(\.name)) != before ?? [], false)
        }
        if hostsCapReached {
            logger.warning("announcements from more hosts than the bridge keeps track of are ignored", metadata: [
                "host": "\(host)", "max_remote_hosts": "\(Self.maxRemoteHosts)",
            ])
        }
        return changed
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
                "announcements_refused": .int(Int64(state.announcementsRefused)),
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
            if state.remotes.count < Self.maxRemoteHosts { state.overHostsCap = false }
            var plan = Plan()
            var refused = 0
            // Each host's matching targets in name order, up to its cap; a
            // target announced by several hosts is imported once.
            var wanted: [String: (target: BridgeMessages.Announcement.Target, host: String)] = [:]
            var overCap: Set<String> = []
            for (host, entry) in state.remotes.sorted(by: { $0.key < $1.key }) {
                if entry.matching > entry.targets.count {
                    overCap.insert(host)
                    refused += entry.matching - entry.targets.count
                    if !state.hostsOverCap.contains(host) { plan.hostsNewlyOverCap.append((host, entry.matching)) }
                }
                for target in entry.targets where wanted[target.name] == nil { wanted[target.name] = (target, host) }
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
        // Sealed memfds cross as bytes (BridgeBlobs); RemoteCalls refuses any other descriptor.
        component.acceptsDescriptors = true
        let name = target.name
        let ownPID = getpid()
        let forward: @Sendable (CallContext) async throws -> MediatorReply = { context in
            // A call from this process is one this host's exporter took from
            // NATS while no local instance was left: sending it back to NATS
            // could bring it here again.
            if context.caller?.pid == ownPID {
                throw MediatorError(.targetNotFound, "\"\(name)\" has no instance on this host").delivered(.no)
            }
            return try await calls.forward(name, over: nats, context)
        }
        for spec in target.actions where spec.name != "notFound" {
            component.addDescriptorAction(
                spec.name, description: spec.description, params: spec.params, result: spec.result, url: spec.url, forward)
        }
        if target.actions.contains(where: { $0.name == "notFound" }) {
            component.handleNotFound { action, params, context in
                var context = context
                context.action = action
                context.params = params
                let reply = try await forward(context)
                // The not-found handler answers JSON only.
                guard reply.descriptors.isEmpty else {
                    throw MediatorError(.fdsNotSupported, "descriptors from another host cannot answer an undeclared action")
                }
                return reply.result
            }
        }
        return component
    }
}
