import Logging
@_spi(NATSBridge) import MediatorClient
import MediatorNATS
import MediatorProtocol
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One run of the bridge with one set of settings (``NATSBridge`` starts a
/// new one when SIGHUP changes them). It is a client of its own daemon,
/// over the daemon's socket, like any component: the broker core knows
/// nothing of NATS, and a slow or absent NATS never delays local routing.
///
/// - Export: each local target matching an export pattern is subscribed to
///   on `<prefix>.call.<target>` in the queue group of that name, and
///   announced on `<prefix>.hosts` every interval.
/// - Import: each remote target announced by another host and matching an
///   import pattern is registered on the local daemon as a stand-in
///   (``ImportedTargets``), all over one daemon connection.
final class BridgeSession: Sendable {
    private let settings: NATSBridgeSettings
    private let subjects: BridgeSubjects
    private let logger: Logger

    private let imports: ImportedTargets

    private struct State: Sendable {
        var exported: [String: NATSSubscription] = [:]
        /// The specs of each exported target, read once with `describe`.
        var exportedSpecs: [String: BridgeMessages.Announcement.Target] = [:]
        /// Other daemons heard announcing this host's name, each logged once.
        var nameClashes: Set<String> = []
        /// The daemon process (`instance`) last heard from each other host,
        /// at most ``ImportedTargets/maxRemoteHosts``.
        var instances: [String: String] = [:]
    }

    /// When each kind of NATS error (status and subject) was last logged,
    /// and how many of it were not since.
    private let loggedErrors = Mutex<[String: (last: ContinuousClock.Instant, unreported: Int)]>([:])
    /// One line per kind of NATS error in this interval, at most.
    static let errorLogInterval: Duration = .seconds(10)

    /// nil when `error` is not to be logged now; otherwise how many of its
    /// kind were not logged since the last line.
    private func errorToLog(_ error: NATSError) -> Int? {
        let key = "\(error.status) \(error.operation)"
        let now = ContinuousClock.now
        return loggedErrors.withLock { logged -> Int? in
            let previous = logged[key]
            if let previous, now - previous.last < Self.errorLogInterval {
                logged[key]?.unreported += 1
                return nil
            }
            logged[key] = (now, 0)
            return previous?.unreported ?? 0
        }
    }

    /// This daemon process among those that announce on one NATS: tells
    /// another daemon using the same host name from this one.
    static let instance = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    /// Other daemons using this host's name that are logged; past it, no more.
    static let maxNameClashesLogged = 16

    private let state = Mutex(State())
    /// Rung when another host announces targets not seen before (the next
    /// round then runs at once instead of at the end of the interval), and
    /// when the settings change (``nudge()``).
    private let doorbell = Doorbell()

    init(settings: NATSBridgeSettings, logger: Logger) {
        self.settings = settings
        self.subjects = BridgeSubjects(prefix: settings.prefix)
        self.logger = logger
        self.imports = ImportedTargets(settings: settings, logger: logger)
    }

    /// The bridge's figures for `mediator/stats` (docs/scale-out.md).
    var statistics: JSONValue {
        var members = imports.statistics
        members["host"] = .string(settings.host)
        members["exported"] = .int(Int64(state.withLock { $0.exported.count }))
        return .object(members)
    }

    /// `active` may have turned false: the round looks now.
    func nudge() { doorbell.ring() }

    /// Runs until `active` turns false or the task is cancelled, then leaves
    /// cleanly: announces it, cancels what runs, closes the connections.
    func run(while active: @escaping @Sendable () -> Bool) async throws {
        try settings.validate()
        let calls = RemoteCalls(
            inbox: NATSConnection.newInbox(), subjects: subjects, host: settings.host,
            livenessTimeout: settings.livenessTimeout, maxFdBytes: settings.maxFdBytes, logger: logger)
        let watcher = Task { await calls.watch() }
        defer { watcher.cancel() }
        var natsOptions = settings.nats
        // Its own calls and events never come back to it through NATS.
        natsOptions.noEcho = true
        let events: @Sendable (NATSConnectionEvent) -> Void = { [self, logger] event in
            switch event {
            case .disconnected:
                logger.warning("NATS disconnected; calls to other hosts fail until it is back")
                calls.failAll(MediatorError(.componentUnavailable, "the connection to NATS was lost"))
            case .reconnected: logger.notice("NATS reconnected")
            case .connected: logger.notice("NATS connected")
            case .closed: logger.debug("NATS connection closed")
            case .error(let error):
                // libnats reports a slow consumer per message it drops: one line per kind and interval.
                guard let unreported = self.errorToLog(error) else { return }
                logger.warning("NATS reported an error", metadata: [
                    "error": "\(error.text)", "during": "\(error.operation)", "status": "\(error.status)",
                    "not_logged_since": "\(unreported)",
                ])
            }
        }
        let nats = try connectNATS(natsOptions, events: events)
        defer { nats.close() }
        let client = try await connectLocal()
        let exports = ExportedCalls(
            client: client, connection: nats, host: settings.host, maxFdBytes: settings.maxFdBytes, logger: logger)
        let chunks = try nats.subscribe(exports.inbox + ".*", pendingBytes: RemoteCalls.inboxPendingBytes) {
            exports.received(chunk: $0)
        }
        let inbox = try nats.subscribe(calls.inbox + ".*", pendingBytes: RemoteCalls.inboxPendingBytes) { calls.deliver($0) }
        let hosts = try nats.subscribe(subjects.hosts) { [self] message in
            heard(message)
            calls.heard(message)
        }
        let cancels = try nats.subscribe(subjects.cancel) { exports.cancel($0) }
        var eventSubscription: NATSSubscription?
        var localEvents: Task<Void, Never>?
        if !settings.events.isEmpty {
            let events = BridgedEvents(patterns: settings.events, subjects: subjects, host: settings.host, logger: logger)
            let stream = try await client.events(settings.events)
            localEvents = Task { await events.forwardLocal(stream, to: nats) }
            eventSubscription = try nats.subscribe(subjects.events) { events.received($0, client: client) }
        }
        // The stand-ins' one daemon connection; after a reconnect, the next round registers them again.
        let standIns = Task { [self] in await imports.connection.run { self.doorbell.ring() } }
        logger.info("NATS bridge up", metadata: [
            "host": "\(settings.host)", "instance": "\(Self.instance)", "prefix": "\(settings.prefix)",
            "exports": "\(settings.exports)", "imports": "\(settings.imports)", "events": "\(settings.events)",
        ])

        // Until the daemon shuts down or the settings change.
        while !Task.isCancelled && active() {
            await refresh(client: client, nats: nats, exports: exports, calls: calls)
            // The interval, or less when news arrives or a registration is to be tried again.
            let end = min(ContinuousClock.now + settings.announceInterval, imports.nextRetry ?? .now + settings.announceInterval)
            if active() { await doorbell.wait(until: end) }
        }

        // Leaving: the others drop this host's targets now, not after three intervals.
        try? nats.publish(subjects.hosts, payload: BridgeMessages.Announcement(
            host: settings.host, targets: [], intervalMs: RemoteCalls.milliseconds(settings.announceInterval), leaving: true,
            instance: Self.instance
        ).encoded)
        try? nats.flush(timeout: .milliseconds(500))
        exports.cancelAll()
        state.withLock { $0.exported.removeAll() }
        standIns.cancel()
        await standIns.value
        localEvents?.cancel()
        _ = (inbox, chunks, hosts, cancels, eventSubscription)
        await client.close()
    }

    /// Connects to NATS; when no server answers, says why in the log and
    /// leaves libnats to keep trying in the background. (libnats's own
    /// retrying first connect only says "not yet connected": one attempt
    /// without it first gives the reason, e.g. a refused connection or
    /// credentials.)
    private func connectNATS(
        _ options: NATSOptions, events: @escaping @Sendable (NATSConnectionEvent) -> Void
    ) throws -> NATSConnection {
        guard options.retryFirstConnect else { return try NATSConnection.connect(options, events: events) }
        var once = options
        once.retryFirstConnect = false
        do {
            return try NATSConnection.connect(once, events: events)
        } catch {
            logger.warning("NATS not reachable; retrying in the background every \(options.reconnectWait)", metadata: [
                "servers": "\(options.servers.joined(separator: ","))", "error": "\(error.text)", "status": "\(error.status)",
            ])
        }
        return try NATSConnection.connect(options, events: events)
    }

    /// The local daemon, once it listens (it starts in the same process).
    private func connectLocal() async throws -> MediatorClient {
        var delay: Duration = .milliseconds(20)
        while true {
            do {
                return try await MediatorClient.connect(socketPath: settings.socketPath, name: "nats-bridge", fds: true)
            } catch {
                try Task.checkCancellation()
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(1))
            }
        }
    }

    /// An announcement from `<prefix>.hosts` (a libnats thread).
    private func heard(_ message: NATSMessage) {
        guard let announcement = BridgeMessages.Announcement.decode(message.payload) else { return }
        guard announcement.host != settings.host else {
            // NATS does not echo this connection's messages: this is another daemon.
            if announcement.instance != Self.instance { nameClash(announcement) }
            return
        }
        let newcomer = isNewInstance(announcement)
        if imports.heard(announcement) || newcomer { doorbell.ring() }
    }

    /// Whether the announcement comes from a daemon process of its host not
    /// heard before: a host that started, or whose mediatord restarted or
    /// re-executed. This host then announces at once, instead of at the end
    /// of its interval, so that the newcomer imports from it within a round
    /// trip: its stand-ins are back before the calls held for them (the
    /// re-registration hold after a hand-over) are answered.
    private func isNewInstance(_ announcement: BridgeMessages.Announcement) -> Bool {
        state.withLock { state in
            guard !announcement.leaving, let instance = announcement.instance else {
                if announcement.leaving { state.instances[announcement.host] = nil }
                return false
            }
            let before = state.instances[announcement.host]
            guard before != instance else { return false }
            guard before != nil || state.instances.count < ImportedTargets.maxRemoteHosts else { return false }
            state.instances[announcement.host] = instance
            return true
        }
    }

    /// Another daemon announces the host name this one uses: each drops the
    /// other's targets as its own, and callers cannot tell them apart. Said
    /// once per other daemon.
    private func nameClash(_ announcement: BridgeMessages.Announcement) {
        let other = announcement.instance ?? "unknown"
        let isNew = state.withLock { state -> Bool in
            guard state.nameClashes.count < Self.maxNameClashesLogged else { return false }
            return state.nameClashes.insert(other).inserted
        }
        guard isNew else { return }
        logger.error(
            "another Mediator daemon announces this host's name on NATS; each ignores the other's targets: give each daemon its own --nats-host",
            metadata: ["host": "\(settings.host)", "instance": "\(Self.instance)", "other_instance": "\(other)"])
    }

    /// One round: what is local and exported, what is remote and imported.
    private func refresh(client: MediatorClient, nats: NATSConnection, exports: ExportedCalls, calls: RemoteCalls) async {
        let local: [String: JSONValue]
        do {
            local = Self.localTargets(try await client.list())
        } catch {
            logger.warning("NATS bridge cannot list the local targets: \(error)")
            return
        }
        await export(local, client: client, nats: nats, exports: exports)
        await imports.reconcile(nats: nats, calls: calls)
    }

    /// The targets of a `list` result that are this host's to export: those
    /// with an instance that is not a stand-in, or known from a manifest and
    /// not running (no instance: it starts on a call); not one whose
    /// manifest is invalid (state `invalid`), which no call reaches.
    static func localTargets(_ listing: JSONValue) -> [String: JSONValue] {
        var local: [String: JSONValue] = [:]
        for entry in listing["targets"]?.arrayValue ?? [] {
            guard let name = entry["target"]?.stringValue, entry["state"]?.stringValue != "invalid" else { continue }
            let instances = entry["instances"]?.arrayValue ?? []
            if instances.isEmpty || instances.contains(where: { $0["remote_host"] == nil }) { local[name] = entry }
        }
        return local
    }

    private func export(_ local: [String: JSONValue], client: MediatorClient, nats: NATSConnection, exports: ExportedCalls) async {
        let wanted = local.keys.filter { TargetPattern.any(settings.exports, match: $0) }.sorted()
        var announced: [BridgeMessages.Announcement.Target] = []
        for name in wanted {
            let known = state.withLock { $0.exportedSpecs[name] }
            if let known {
                announced.append(known)
            } else if let described = try? await client.describe(name) {
                let target = BridgeMessages.Announcement.Target(
                    name: name, description: described["description"]?.stringValue,
                    actions: (described["actions"]?.arrayValue ?? []).compactMap { try? ActionSpec(json: $0) })
                state.withLock { $0.exportedSpecs[name] = target }
                announced.append(target)
            }
            if state.withLock({ $0.exported[name] }) == nil {
                do {
                    let subscription = try nats.subscribe(subjects.call(name), queue: subjects.call(name)) { message in
                        exports.received(message, target: name)
                    }
                    state.withLock { $0.exported[name] = subscription }
                    logger.info("exporting \(name) over NATS")
                } catch {
                    logger.warning("cannot export \(name) over NATS: \(error)")
                }
            }
        }
        // Targets gone locally are no longer served from here.
        let gone = state.withLock { state -> [NATSSubscription] in
            let names = state.exported.keys.filter { !wanted.contains($0) }
            defer { for name in names { state.exported[name] = nil; state.exportedSpecs[name] = nil } }
            return names.compactMap { state.exported[$0] }
        }
        for subscription in gone { subscription.unsubscribe() }
        let announcement = BridgeMessages.Announcement(
            host: settings.host, targets: announced, intervalMs: RemoteCalls.milliseconds(settings.announceInterval),
            instance: Self.instance)
        try? nats.publish(subjects.hosts, payload: announcement.encoded)
    }
}
