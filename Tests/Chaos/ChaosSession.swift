import ChildProcesses
import Foundation
import Glibc
import MediatorProtocol

/// One chaos run from start to verdict, on the main thread: a single poll
/// loop drives the clients, and the chaos happens between its turns, so no
/// state is shared between threads.
final class ChaosSession {
    struct Settings {
        var seconds: Double
        var warmup: Double
        var clients: Int
        var depth: Int
        var seed: UInt64
        var rssTolerancePercent: Double
        var minCalls: Int
        /// The issue 10 probes that run (`--skip-probe` leaves some out).
        var probes: Set<Probe> = Set(Probe.allCases)
        /// Percent of the strikes that re-execute the daemon (`--reexec-percent`).
        var reexecPercent = 0
    }

    struct Paths {
        var mediatord: String
        var chaosBinary: String
        var python: String
        var notesScript: String
        var fdsScript: String
    }

    /// What one load phase did.
    struct PhaseReport {
        var name: String
        var seconds: Double
        var issued: Int
        var drainSeconds: Double
        var peakRSSKB: Int
        var fleet: Fleet.Counters
    }

    let settings: Settings
    let paths: Paths
    let work: String
    let socketPath: String
    let violations = Violations()
    private var rng: SeededGenerator
    private let mix: CallMix
    private var daemon: ChildProcess?
    private var daemonPID: pid_t { daemon?.pid ?? 0 }
    private var daemonEnded: Int32?
    private var fleet: Fleet?
    /// The load clients, and last the probe client (no load; the held-call probes).
    private var clients: [LoadClient] = []
    private var probes: Probes?

    /// How long the daemon's and the components' descriptors may take to be
    /// back at their baselines once the run has settled (a component's
    /// handler threads finish their cancelled calls).
    static let descriptorSettleSeconds = 5.0

    /// Margin on top of the longest call when waiting for the last answers.
    static let drainMarginMs: Int64 = 5000
    /// Chaos strikes every 150 ms to 1.2 s.
    static let strikeIntervalNs: ClosedRange<UInt64> = 150_000_000...1_200_000_000

    init(settings: Settings, paths: Paths, workFolder: String) throws {
        self.settings = settings
        self.paths = paths
        self.work = workFolder
        self.socketPath = "\(workFolder)/mediator.sock"
        self.rng = SeededGenerator(seed: settings.seed)
        var mix = CallMix()
        if !settings.probes.contains(.nestedOpen) { mix.skipped.insert(.nestedOpen) }
        self.mix = mix
    }

    /// Runs everything; the exit status (0: every check passed).
    func run() -> Int32 {
        defer { tearDown() }
        do {
            return try runChecked()
        } catch {
            violations.add("run aborted", "\(error)")
            printViolations()
            print("mediator-chaos: FAIL")
            return 1
        }
    }

    private func runChecked() throws -> Int32 {
        let components = "\(work)/components.d"
        let policy = "\(work)/policy.d"
        for folder in [components, policy] {
            guard mkdir(folder, 0o755) == 0 else { throw ChaosFailure.sys("mkdir \(folder)") }
        }
        try Fleet.writeManifests(into: components, chaosBinary: paths.chaosBinary)
        try startDaemon(components: components, policy: policy)

        let fleet = try Fleet(
            socketPath: socketPath, logPath: "\(work)/components.log", chaosBinary: paths.chaosBinary,
            python: paths.python, notesScript: paths.notesScript, fdsScript: paths.fdsScript, violations: violations)
        self.fleet = fleet
        fleet.reexecPercent = settings.reexecPercent
        fleet.startAll()
        try fleet.settle(within: 30)
        // The components that pass descriptors, idle: what they may hold at the end.
        let componentBaseline = fleet.descriptorCounts(of: ChaosTargets.fds).values.max() ?? 0

        for index in 0..<settings.clients {
            clients.append(try LoadClient(
                index: index, socketPath: socketPath, violations: violations, pid: Int64(getpid()), uid: Int64(getuid())))
        }
        // Two clients also watch the daemon's events, which flow at every kill and restart.
        for client in clients.prefix(2) { client.subscribe() }
        let probeClient = try LoadClient(
            index: settings.clients, role: .probe, socketPath: socketPath, violations: violations,
            pid: Int64(getpid()), uid: Int64(getuid()))
        clients.append(probeClient)
        probes = Probes(enabled: settings.probes, fleet: fleet, client: probeClient, violations: violations)
        _ = drain(within: 5)

        print("mediator-chaos: mediatord pid \(daemonPID)")
        let cold = try measureRSS("before any load")

        let warm = try phase("warm-up", seconds: settings.warmup)
        let warmRSS = try measureRSS("after the warm-up")
        // A fresh image has not made the spawner's own descriptors (made at
        // its first spawn): with re-execs, both counts come from one.
        if settings.reexecPercent > 0 { fleet.reexecDaemon() }
        let daemonBaseline = ProcStats.openDescriptors(daemonPID) ?? []
        let countersBefore = fleet.counters
        var chaos = try phase("chaos", seconds: settings.seconds)
        chaos.fleet = Self.difference(fleet.counters, countersBefore)
        let endRSS = try measureRSS("after the run")
        let descriptors = checkDescriptorsBack(daemon: daemonBaseline, component: componentBaseline)

        // The daemon still answers.
        var pingOK = true
        do {
            _ = try fleet.controlResult("ping", seconds: 5)
        } catch {
            pingOK = false
            violations.add("daemon does not answer ping after the run", "\(error)")
        }
        let unanswered = clients.flatMap { $0.unanswered() }
        for line in unanswered { violations.add("call without a final answer (hangs)", line) }
        for client in clients where client.duplicatesAwaitingRefusal > 0 {
            violations.add(
                "duplicate id of a held call not refused (no bad_request with id null)",
                "client \(client.index): \(client.duplicatesAwaitingRefusal) duplicate(s)")
        }

        var tally = Tally()
        for client in clients { tally.add(client.tally) }
        if let probes { tally.add(probes.tally) }
        let seen = fleet.managedPIDsSeen
        checkNotVacuous(chaos: chaos, tally: tally, seen: seen)

        let limit = Double(warmRSS) * (1 + settings.rssTolerancePercent / 100)
        if Double(endRSS) > limit {
            violations.add(
                "daemon memory not back within \(settings.rssTolerancePercent)% of the baseline",
                "RSS \(endRSS) kB after the run, baseline (idle after the warm-up) \(warmRSS) kB, limit \(Int(limit)) kB")
        }

        // It stops cleanly too: SIGTERM, exit status 0.
        fleet.stopAll()
        let stopped = stopDaemon()
        if stopped != 0 {
            violations.add("daemon did not stop cleanly on SIGTERM", stopped.map { Children.describe(status: $0) } ?? "not reaped within 15 s")
        }

        printSummary(
            tally: tally, warm: warm, chaos: chaos, rss: (cold, warmRSS, endRSS, limit), pingOK: pingOK, seen: seen)
        print("""
            descriptors (issue 26): sent \(tally.descriptorsSent), received \(tally.descriptorsReceived); \
            read results with their copy \(tally.descriptorResults), partials with theirs \(tally.partialsWithDescriptors); \
            mediatord open descriptors idle after warm-up \(daemonBaseline.count), after the run \(descriptors.daemon); \
            \(ChaosTargets.fds) processes idle at the start at most \(componentBaseline), after the run \(descriptors.components)
            """)
        if violations.isEmpty {
            print("mediator-chaos: PASS")
            return 0
        }
        printViolations()
        print("mediator-chaos: FAIL (\(violations.total) violation(s) in \(violations.categories.count) categories)")
        return 1
    }

    // MARK: - The daemon

    private func startDaemon(components: String, policy: String) throws {
        let argv = [
            paths.chaosBinary, ExecTrampoline.verb, paths.mediatord, "--socket", socketPath,
            "--components", components, "--policy", policy,
            "--default-timeout-ms", String(CallMix.daemonDefaultTimeoutMs), "--log-level", "info",
        ]
        let daemon = try Children.spawn(argv, name: "mediatord", output: .appendTo("\(work)/mediatord.log"))
        self.daemon = daemon
        // Ready when it answers ping; bounded, and failing at once if it exits.
        let deadline = monotonicNanos() + 15_000_000_000
        while true {
            if let status = Children.reap(daemon) {
                daemonEnded = status
                throw ChaosFailure("mediatord ended (\(Children.describe(status: status))) before answering ping; see \(work)/mediatord.log")
            }
            if let socket = try? LineSocket.connect(path: socketPath),
                (try? socket.result("mediator", "ping", id: 1, seconds: 2)) != nil
            {
                return
            }
            guard monotonicNanos() < deadline else { throw ChaosFailure("mediatord did not answer ping within 15 s") }
            usleep(20_000)
        }
    }

    private func checkDaemonAlive() throws {
        guard daemonEnded == nil, let daemon, let status = Children.reap(daemon) else { return }
        daemonEnded = status
        throw ChaosFailure("mediatord ended during the run (\(Children.describe(status: status))); see \(work)/mediatord.log")
    }

    /// The daemon's resident memory once idle: every phase has drained and
    /// the fleet is settled. Sampled every 200 ms until five samples in a row
    /// lie within 64 kB of each other (at most 25 samples); their median.
    private func measureRSS(_ when: String) throws -> Int {
        try checkDaemonAlive()
        var samples: [Int] = []
        for attempt in 0..<25 {
            guard let rss = ProcStats.statusKB(daemonPID, "VmRSS") else { throw ChaosFailure("cannot read VmRSS of mediatord") }
            samples.append(rss)
            if samples.count > 5 { samples.removeFirst() }
            if samples.count == 5, let low = samples.min(), let high = samples.max(), high - low <= 64 { break }
            if attempt < 24 { usleep(200_000) }  // the sampling interval
        }
        let median = samples.sorted()[samples.count / 2]
        let breakdown = MemoryBreakdown(pid: daemonPID).map { " (\($0))" } ?? ""
        print("mediator-chaos: mediatord RSS idle \(when): \(median) kB\(breakdown)")
        return median
    }

    // MARK: - Load phases

    /// Load and chaos for `seconds`, then no new calls and no more kills
    /// until every call has its final answer (bounded), then the fleet is
    /// brought back to its settled state.
    private func phase(_ name: String, seconds: Double) throws -> PhaseReport {
        guard let fleet else { throw ChaosFailure("no fleet") }
        let issuedBefore = clients.reduce(0) { $0 + $1.tally.issued }
        let start = monotonicNanos()
        let end = start + UInt64(seconds * 1e9)
        var nextStrike = start + UInt64.random(in: Self.strikeIntervalNs, using: &rng)
        var nextSample = start
        var peak = 0
        print("mediator-chaos: \(name): \(settings.clients) clients x \(settings.depth) calls in flight, chaos for \(seconds) s")
        while true {
            let now = monotonicNanos()
            if now >= end { break }
            try checkDaemonAlive()
            for client in clients { client.topUp(depth: settings.depth, mix: mix, rng: &rng) }
            pollClients(timeoutMs: 10)
            fleet.reap(now: now)
            fleet.restartDue(now: now)
            fleet.closeAbandoned(now: now)
            probes?.tick(now: now, mix: mix, rng: &rng)
            if now >= nextStrike {
                fleet.strike(using: &rng, now: now)
                nextStrike = monotonicNanos() + UInt64.random(in: Self.strikeIntervalNs, using: &rng)
            }
            if now >= nextSample {
                peak = max(peak, ProcStats.statusKB(daemonPID, "VmRSS") ?? 0)
                nextSample = now + 1_000_000_000
            }
        }
        let issued = clients.reduce(0) { $0 + $1.tally.issued } - issuedBefore
        let drainStart = monotonicNanos()
        let drained = drain(within: Double(CallMix.longestCallMs + Self.drainMarginMs) / 1000)
        let drainSeconds = Double(monotonicNanos() - drainStart) / 1e9
        print(String(format: "mediator-chaos: %@: %d calls issued; %@ in %.2f s", name, issued,
                     drained ? "every call answered" : "calls still unanswered", drainSeconds))
        try fleet.settle(within: 30)
        return PhaseReport(name: name, seconds: seconds, issued: issued, drainSeconds: drainSeconds, peakRSSKB: peak,
                           fleet: fleet.counters)
    }

    /// Reads until no client has a call in flight, or `seconds` pass. Owned
    /// components killed earlier are started again meanwhile (no new kills).
    @discardableResult
    private func drain(within seconds: Double) -> Bool {
        let deadline = monotonicNanos() + UInt64(seconds * 1e9)
        while monotonicNanos() < deadline {
            if clients.allSatisfy({ $0.allAnswered || !$0.isOpen }) { return true }
            pollClients(timeoutMs: 20)
            let now = monotonicNanos()
            fleet?.reap(now: now)
            fleet?.restartDue(now: now)
            fleet?.closeAbandoned(now: now)
        }
        return clients.allSatisfy { $0.allAnswered }
    }

    private func pollClients(timeoutMs: Int32) {
        let open = clients.filter(\.isOpen)
        var fds = open.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        let ready = poll(&fds, nfds_t(fds.count), timeoutMs)
        guard ready > 0 else { return }
        for (index, entry) in fds.enumerated() where entry.revents != 0 { open[index].receive() }
    }

    // MARK: - Verdict

    /// Whether mediatord has as many descriptors open as at `daemon` (its
    /// list idle after the warm-up), and each `ChaosFds` process at most
    /// `component`, once the run settled: nothing it passed or refused was
    /// kept. Waits for that at most `descriptorSettleSeconds`; the counts
    /// seen last.
    private func checkDescriptorsBack(daemon: [String], component: Int) -> (daemon: Int, components: [Int]) {
        if settings.reexecPercent > 0 { fleet?.reexecDaemon() }  // as for the baseline
        let deadline = monotonicNanos() + UInt64(Self.descriptorSettleSeconds * 1e9)
        var now: [String] = []
        var components: [Int32: Int] = [:]
        while true {
            now = ProcStats.openDescriptors(daemonPID) ?? []
            components = fleet?.descriptorCounts(of: ChaosTargets.fds) ?? [:]
            let back = now.count == daemon.count && components.values.allSatisfy { $0 <= component }
            if back || monotonicNanos() >= deadline { break }
            usleep(100_000)
        }
        if now.count != daemon.count {
            var extra = now
            for target in daemon { if let index = extra.firstIndex(of: target) { extra.remove(at: index) } }
            violations.add(
                "daemon descriptors not back at their baseline",
                "\(now.count) open after the run, \(daemon.count) idle after the warm-up; not there then: \(extra.sorted().prefix(20))")
        }
        for (pid, count) in components.sorted(by: { $0.key < $1.key }) where count > component {
            violations.add(
                "component kept descriptors", "\(ChaosTargets.fds) pid \(pid): \(count) open after the run, at most \(component) when idle")
        }
        for client in clients where !client.socket.arrivedDescriptors.isEmpty {
            violations.add(
                "descriptors that no line declared", "client \(client.index): \(client.socket.arrivedDescriptors.count)")
        }
        return (now.count, components.keys.sorted().compactMap { components[$0] })
    }

    private func checkNotVacuous(chaos: PhaseReport, tally: Tally, seen: [String: Set<Int32>]) {
        func require(_ condition: Bool, _ what: String) {
            if !condition { violations.add("the run proved nothing", what) }
        }
        require(chaos.issued >= settings.minCalls, "only \(chaos.issued) calls issued in the chaos phase; at least \(settings.minCalls) wanted")
        require(chaos.fleet.ownedSIGKILL + chaos.fleet.ownedSIGTERM > 0, "no component the run started was killed")
        require(chaos.fleet.daemonStartedSIGKILL + chaos.fleet.daemonStartedSIGTERM > 0, "no component the daemon started was killed")
        require(chaos.fleet.ownedRestarts > 0, "no killed component was started again")
        require(settings.reexecPercent == 0 || chaos.fleet.reexecs > 0, "the daemon was never re-executed")
        require((seen[ChaosTargets.onDemand]?.count ?? 0) > 1, "\(ChaosTargets.onDemand) was never started again by the daemon")
        require(tally.results > 0, "no call got a result")
        require(tally.errorsByCode["component_unavailable", default: 0] > 0, "no call got component_unavailable")
        require(tally.errorsByCode["timeout", default: 0] > 0, "no call got timeout")
        require(tally.streamsCompleted > 0, "no stream got partials and then its final result")
        require(tally.passedThroughErrors > 0, "no component error was passed through")
        require(tally.descriptorResults > 0, "no call's descriptor came back in a copy from \(ChaosTargets.fds)")
        require(tally.partialsWithDescriptors > 0, "no stream partial carried a descriptor")
        require(tally.errorsByCode["bad_request", default: 0] > 0, "no call with fewer descriptors than declared was refused")
        // The issue 10 probes: each must have been made and answered as expected.
        let probes = settings.probes
        if probes.contains(.nestedOpen) {
            require(tally.nestedOpensForbidden > 0, "no nested mediator/open was answered forbidden")
            require(
                tally.deepNestedOpensForbidden > 0,
                "no mediator/open nested \(CallMix.deepNestingCounted) or more deep was answered forbidden")
        }
        if probes.contains(.heldDuplicate) {
            require(tally.duplicateIDsRefused > 0, "no duplicate id of a held call was refused with bad_request")
            require(tally.heldDuplicatesAnswered > 0, "no held call sent twice got its answer")
        }
        if probes.contains(.heldCancel) {
            require(tally.heldCancelsCancelled > 0, "no cancelled held call was answered cancelled")
        }
        if probes.contains(.poolTwice) {
            require(tally.poolSecondJoinsRefused > 0, "no second join of a pool on one connection was refused")
        }
    }

    private func printSummary(
        tally: Tally, warm: PhaseReport, chaos: PhaseReport, rss: (cold: Int, warm: Int, end: Int, limit: Double),
        pingOK: Bool, seen: [String: Set<Int32>]
    ) {
        let f = chaos.fleet
        let errors = tally.errorsByCode.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let kinds = tally.issuedByKind.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")
        let pids = seen.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.count)" }.joined(separator: ", ")
        func percent(_ value: Int, of base: Int) -> String {
            String(format: "%+.1f%%", (Double(value) / Double(max(base, 1)) - 1) * 100)
        }
        print("""
            ---- mediator-chaos summary (seed \(settings.seed)) ----
            phases: warm-up \(warm.seconds) s (\(warm.issued) calls, drained in \(String(format: "%.2f", warm.drainSeconds)) s), \
            chaos \(chaos.seconds) s (\(chaos.issued) calls, drained in \(String(format: "%.2f", chaos.drainSeconds)) s)
            calls issued (both phases): \(tally.issued); final answers \(tally.finals): results \(tally.results), errors \(tally.finals - tally.results)
            errors by code: \(errors)
            partials \(tally.partials); streams completed after partials \(tally.streamsCompleted); errors after partials \(tally.errorsAfterPartials)
            cancels sent \(tally.cancelsSent); events received \(tally.eventsReceived)
            probes (\(settings.probes.map(\.rawValue).sorted().joined(separator: ", "))): nested opens forbidden \(tally.nestedOpensForbidden) \
            (deep \(tally.deepNestedOpensForbidden)); held calls sent twice \(tally.heldDuplicatesSent), duplicates refused \
            \(tally.duplicateIDsRefused), answered \(tally.heldDuplicatesAnswered); held calls cancelled \
            \(tally.heldCancelsCancelled) of \(tally.heldCancelsSent); pools joined twice \(tally.poolJoinProbes), \
            refused \(tally.poolSecondJoinsRefused); ChaosOnDemand kills for probes \(f.probeKills), probes skipped \(f.probesSkipped)
            by kind: \(kinds)
            chaos phase kills: run-started SIGKILL \(f.ownedSIGKILL), SIGTERM \(f.ownedSIGTERM), restarted \(f.ownedRestarts), \
            ended by themselves \(f.ownedUnexpectedExits); daemon-started SIGKILL \(f.daemonStartedSIGKILL), \
            SIGTERM \(f.daemonStartedSIGTERM), none running at a strike \(f.daemonStartedNoneRunning)
            abandoned caller connections (chaos phase): \(f.abandonedConnections) with \(f.abandonedCalls) calls in flight
            re-execs of the daemon (chaos phase): \(f.reexecs)
            distinct pids serving manifest targets (both phases): \(pids)
            mediatord RSS: idle before load \(rss.cold) kB; idle after warm-up \(rss.warm) kB (baseline); \
            idle after the run \(rss.end) kB (\(percent(rss.end, of: rss.warm)) vs baseline, \(percent(rss.end, of: rss.cold)) vs before load); \
            limit \(Int(rss.limit)) kB; peak during load \(max(warm.peakRSSKB, chaos.peakRSSKB)) kB
            daemon answers ping after the run: \(pingOK ? "yes" : "NO")
            """)
    }

    private func printViolations() {
        for category in violations.categories {
            print("VIOLATION: \(category): \(violations.counts[category] ?? 0)")
            for example in violations.examples[category] ?? [] { print("    \(example)") }
        }
    }

    private static func difference(_ a: Fleet.Counters, _ b: Fleet.Counters) -> Fleet.Counters {
        Fleet.Counters(
            ownedSIGKILL: a.ownedSIGKILL - b.ownedSIGKILL, ownedSIGTERM: a.ownedSIGTERM - b.ownedSIGTERM,
            ownedRestarts: a.ownedRestarts - b.ownedRestarts, ownedUnexpectedExits: a.ownedUnexpectedExits - b.ownedUnexpectedExits,
            daemonStartedSIGKILL: a.daemonStartedSIGKILL - b.daemonStartedSIGKILL,
            daemonStartedSIGTERM: a.daemonStartedSIGTERM - b.daemonStartedSIGTERM,
            daemonStartedNoneRunning: a.daemonStartedNoneRunning - b.daemonStartedNoneRunning,
            abandonedConnections: a.abandonedConnections - b.abandonedConnections,
            abandonedCalls: a.abandonedCalls - b.abandonedCalls,
            probeKills: a.probeKills - b.probeKills, probesSkipped: a.probesSkipped - b.probesSkipped,
            reexecs: a.reexecs - b.reexecs)
    }

    // MARK: - The end

    /// SIGTERM to the daemon (it stops the components it started); its wait
    /// status, or nil if it had to be killed.
    private func stopDaemon() -> Int32? {
        guard let daemon, daemonEnded == nil else { return daemonEnded }
        let status = Children.stop(daemon, signal: SIGTERM, grace: 10)
        daemonEnded = status ?? -1
        return status
    }

    /// Whatever is left after a failed or aborted run: clients, owned
    /// components, the daemon, and processes the daemon started (which a
    /// killed daemon would leave behind, reconnecting forever).
    private func tearDown() {
        for client in clients { client.socket.close() }
        fleet?.stopAll()
        _ = stopDaemon()
        for pid in (fleet?.managedPIDsSeen.values.flatMap { $0 } ?? []) where isOurComponent(pid) {
            kill(pid, SIGKILL)
        }
        ChildTable.killAll()
    }

    /// Whether `pid` still runs this executable (and is not a reused pid).
    private func isOurComponent(_ pid: Int32) -> Bool {
        guard pid > 0, let cmdline = ProcStats.read("/proc/\(pid)/cmdline") else { return false }
        return cmdline.split(separator: "\0", omittingEmptySubsequences: false).first.map(String.init) == paths.chaosBinary
    }
}
