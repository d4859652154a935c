import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// `mediatord --metrics-listen` (issue 12), scraped with curl and read
    /// by real Prometheus tooling: Debian's python3-prometheus-client parser
    /// and `promtool check metrics` (scripts/install-deps installs both).
    @Suite("Prometheus metrics")
    struct PrometheusMetrics {
        @Test("A scrape over a Unix socket has every call of a real component, parsed and linted by Prometheus tools")
        func scrapeOverAUnixSocket() throws {
            let world = try World()
            defer { world.close() }
            let metricsSocket = world.directory.socket("metrics")
            let daemon = try world.daemon(["--metrics-listen", metricsSocket, "--slow-call-threshold-ms", "50"])
            _ = try world.notes(daemon)
            // Ready is the broker's socket; the endpoint binds beside it.
            try waitUntil("the metrics socket\(daemon.process.logTail())") {
                FileManager.default.fileExists(atPath: metricsSocket)
            }
            let cli = CLI(daemon)
            for text in ["one", "two"] { _ = try cli.json("call", ["Notes", "add", "text=\(text)"]) }
            let missing = try cli.run("call", ["Notes", "get", "id=999"])
            #expect(missing.status == 1, "\(missing)")
            _ = try cli.json("call", ["Notes", "sleep", "ms=80"])

            let text = try Scrape.curl(["--unix-socket", metricsSocket, "http://localhost/metrics"])
            try Scrape.lint(text)
            let samples = try Scrape.parse(text)
            func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
                samples.first { $0.name == name && $0.labels == labels }?.value
            }
            let add = ["target": "Notes", "action": "add"]
            #expect(value("mediator_calls_routed_total", add) == 2)
            #expect(value("mediator_calls_total", add.merging(["code": "ok"]) { $1 }) == 2)
            #expect(value("mediator_call_duration_seconds_count", add) == 2)
            #expect(value("mediator_call_duration_seconds_bucket", add.merging(["le": "+Inf"]) { $1 }) == 2)
            #expect(value("mediator_calls_in_flight", add) == 0)
            let get = ["target": "Notes", "action": "get"]
            // Results are exported even at zero; each error code the component answered has its own series.
            #expect(value("mediator_calls_total", get.merging(["code": "ok"]) { $1 }) == 0)
            let getErrors = samples.filter {
                $0.name == "mediator_calls_total" && $0.labels["action"] == "get" && $0.labels["code"] != "ok"
            }
            #expect(getErrors.count == 1 && getErrors.first?.value == 1, "\(getErrors)")
            let sleep = ["target": "Notes", "action": "sleep"]
            // 80 ms: above the 50 ms bucket, so in no bucket below 0.05 s.
            #expect(value("mediator_call_duration_seconds_bucket", sleep.merging(["le": "0.05"]) { $1 }) == 0)
            #expect(value("mediator_call_duration_seconds_bucket", sleep.merging(["le": "0.1"]) { $1 }) == 1)
            #expect((value("mediator_call_duration_seconds_sum", sleep) ?? 0) >= 0.08)
            #expect(value("mediator_slow_calls_total") == 1)
            #expect(value("mediator_registered_targets") == 1)
            #expect((value("mediator_connections_opened_total") ?? 0) >= 5)
            #expect(value("mediator_uid_connections", ["uid": String(getuid())]) != nil)

            // Counters only grow between scrapes, by what happened in between.
            _ = try cli.json("call", ["Notes", "add", "text=three"])
            let again = try Scrape.parse(try Scrape.curl(["--unix-socket", metricsSocket, "http://localhost/metrics"]))
            #expect(again.first { $0.name == "mediator_calls_routed_total" && $0.labels == add }?.value == 3)

            // Only GET and HEAD, only /metrics.
            let post = try Scrape.status(["--unix-socket", metricsSocket, "-X", "POST", "http://localhost/metrics"])
            #expect(post == "405")
            #expect(try Scrape.status(["--unix-socket", metricsSocket, "http://localhost/"]) == "404")
            #expect(try Scrape.status(["--unix-socket", metricsSocket, "-I", "http://localhost/metrics"]) == "200")
        }

        @Test("A loopback port works, port 0 takes a free one, and other addresses are refused")
        func loopbackPortAndRefusals() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--metrics-listen", "127.0.0.1:0"])
            let text = try Scrape.curl(["http://127.0.0.1:\(try Scrape.port(daemon))/metrics"])
            try Scrape.lint(text)
            #expect(text.contains("mediator_uptime_seconds "))
            // Who is refused, by which quota, is not for every local user (issue 23).
            #expect(!text.contains("mediator_uid_"))
            let other = try World()
            defer { other.close() }
            let told = try other.daemon(["--metrics-listen", "127.0.0.1:0", "--metrics-uid-series"])
            #expect(try Scrape.curl(["http://127.0.0.1:\(try Scrape.port(told))/metrics"]).contains("mediator_uid_connections{"))

            for address in ["0.0.0.0:9464", "192.168.1.1:9464", "example.com:80", "127.0.0.1:99999"] {
                let refused = try ChildProcess.run(
                    Paths.mediatord, ["--socket", world.directory.socket("refused"), "--metrics-listen", address])
                #expect(refused.status != 0 && refused.stderr.contains("--metrics-listen"), "\(address): \(refused)")
            }
        }
    }
}


extension Integration.PrometheusMetrics {
    @Test("300 scrapes that never read: the daemon's memory stays within 20 MiB and comes back; slow readers are let go (issue 23)")
    func floodOfScrapesThatNeverRead() throws {
        let world = try World()
        defer { world.close() }
        let daemon = try world.daemon(["--metrics-listen", "127.0.0.1:0", "--metrics-timeout-ms", "8000"])
        let url = "http://127.0.0.1:\(try Scrape.port(daemon))/metrics"
        try Scrape.fillStatistics(world, daemon, targets: 30, actionsEach: 100)
        var text = ""
        // A few scrapes first: the baseline is a daemon that has been scraped.
        for _ in 0..<3 { text = try Scrape.curl([url]) }
        #expect(text.utf8.count > 4 << 20, "a large exposition: \(text.utf8.count) bytes")
        let baseline = try ProcFS.residentKiB(daemon.pid)

        let flooder = try world.spawn(try SharedFiles.python(), ["-c", Scrape.flooder, url, "300"], label: "flooder")
        try flooder.waitForLine("flooding", within: .seconds(60))
        var peak = baseline
        // Longer than the connection timeout: slow readers are closed and others take their place.
        let end = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < end {
            peak = max(peak, try ProcFS.residentKiB(daemon.pid))
            usleep(20_000)
        }
        #expect(peak - baseline < 20 << 10, "RSS \(baseline) KiB before the flood, \(peak) KiB at its peak")
        flooder.kill()
        _ = try? flooder.waitForExit(within: .seconds(10))

        // Served again, and the memory came back.
        #expect(try Scrape.curl([url]).contains("mediator_uptime_seconds "))
        let after = try ProcFS.residentKiB(daemon.pid)
        #expect(after - baseline < 20 << 10, "RSS \(baseline) KiB before the flood, \(after) KiB after it")
    }

    @Test(
        "On a Unix socket, the per-uid series go to peers with the monitor grant only (issue 23)",
        .enabled(if: OtherUser.available, "needs root and util-linux setpriv"))
    func uidSeriesByTheMonitorGrant() throws {
        let world = try World()
        defer { world.close() }
        let socket = world.directory.socket("metrics")
        let policy: JSONValue = ["rules": [["match": ["uid": 4101], "allow": ["monitor": true]]]]
        let daemon = try world.daemon(policy: policy, ["--metrics-listen", socket])
        try waitUntil("the metrics socket\(daemon.process.logTail())") { FileManager.default.fileExists(atPath: socket) }
        // As an operator would give a group access; here everyone, so that the uids below can connect.
        #expect(chmod(socket, 0o666) == 0)
        func scrape(_ user: OtherUser?) throws -> String {
            let arguments = ["--silent", "--fail", "--max-time", "10", "--unix-socket", socket, "http://localhost/metrics"]
            guard let user else { return try Scrape.curl(Array(arguments.dropFirst(3))) }
            let outcome = try user.run("/usr/bin/curl", arguments, directory: nil)
            guard outcome.status == 0 else { throw HarnessError("curl as \(user): \(outcome)") }
            return outcome.stdout
        }
        let root = try scrape(nil)
        #expect(root.contains("mediator_uid_connections{"))
        #expect(try scrape(OtherUser(uid: 4101, gid: 4101)).contains("mediator_uid_connections{"))
        let nobody = try scrape(.nobody)
        #expect(nobody.contains("mediator_uptime_seconds ") && !nobody.contains("mediator_uid_"))
    }
}

/// Fetching and reading a scrape with outside tools.
enum Scrape {
    struct Sample: CustomStringConvertible {
        var name: String
        var labels: [String: String]
        var value: Double
        var description: String { "\(name)\(labels) \(value)" }
    }

    /// The loopback port a daemon's metrics endpoint took (`127.0.0.1:0`), from its log.
    static func port(_ daemon: DaemonProcess) throws -> String {
        var port: String?
        try waitUntil("the metrics endpoint's port in the log\(daemon.process.logTail())") {
            guard let line = daemon.process.stderrLines.first(where: { $0.contains("metrics endpoint listening") }),
                let range = line.range(of: #"address=127\.0\.0\.1:[0-9]+"#, options: .regularExpression)
            else { return false }
            port = String(line[range].split(separator: ":").last ?? "")
            return true
        }
        return try #require(port)
    }

    /// `targets` raw components of `actionsEach` actions, each action called
    /// once: that many statistics entries, and series per entry.
    static func fillStatistics(_ world: World, _ daemon: DaemonProcess, targets: Int, actionsEach: Int) throws {
        let component = try world.peer(daemon)
        let caller = try world.peer(daemon)
        for target in 0..<targets {
            _ = try component.register("Filled\(target)", actions: (0..<actionsEach).map { .string("a\($0)") })
            // A target's calls at once, then their answers: small enough for every queue.
            let ids = try (0..<actionsEach).map { try caller.request("Filled\(target)", "a\($0)") }
            for _ in 0..<actionsEach { try component.reply(to: try component.incomingRequest(), result: [:]) }
            for id in ids { _ = try caller.response(to: id) }
        }
    }

    /// Opens `count` connections to the URL's port (without waiting for the
    /// ones the daemon does not accept yet), sends each a GET, prints
    /// `flooding` and never reads, until killed.
    static let flooder = """
        import socket, sys, time, urllib.parse
        url = urllib.parse.urlparse(sys.argv[1]); count = int(sys.argv[2])
        held = []
        for _ in range(count):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.setblocking(False)
            try:
                s.connect((url.hostname, url.port))
            except BlockingIOError:
                pass
            held.append(s)
        time.sleep(0.2)
        for s in held:
            try:
                s.send(b"GET /metrics HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n")
            except OSError:
                pass
        print("flooding", flush=True)
        time.sleep(3600)

        """

    static func curl(_ arguments: [String]) throws -> String {
        let outcome = try ChildProcess.run("/usr/bin/curl", ["--silent", "--show-error", "--fail", "--max-time", "10"] + arguments)
        guard outcome.status == 0 else { throw HarnessError("curl \(arguments) failed: \(outcome)") }
        return outcome.stdout
    }

    /// The HTTP status code alone.
    static func status(_ arguments: [String]) throws -> String {
        let outcome = try ChildProcess.run(
            "/usr/bin/curl", ["--silent", "--max-time", "10", "--output", "/dev/null", "--write-out", "%{http_code}"] + arguments)
        return outcome.stdout
    }

    /// `promtool check metrics`: the text format and Prometheus's naming rules.
    static func lint(_ text: String) throws {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let file = directory.file("scrape.txt")
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let outcome = try ChildProcess.run("/bin/sh", ["-c", "promtool check metrics < \"$1\"", "lint", file])
        guard outcome.status == 0 else { throw HarnessError("promtool check metrics found problems: \(outcome)") }
    }

    /// Every sample, as Prometheus's own Python parser reads it (Debian's
    /// python3 has the package; pyenv's may not, hence /usr/bin/python3).
    static func parse(_ text: String) throws -> [Sample] {
        let directory = try TestDirectory()
        defer { directory.remove() }
        let file = directory.file("scrape.txt")
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            text = open(sys.argv[1]).read()
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    print(json.dumps({"name": sample.name, "labels": sample.labels, "value": sample.value}))
            """
        let outcome = try ChildProcess.run("/usr/bin/python3", ["-c", script, file])
        guard outcome.status == 0 else { throw HarnessError("the Prometheus parser refused the scrape: \(outcome)") }
        return try ChildProcess.lines(outcome.stdout).map { line in
            let json = try JSONParser.parse(line)
            var labels: [String: String] = [:]
            for (key, value) in json["labels"]?.objectValue ?? [:] { labels[key] = value.stringValue }
            return Sample(
                name: json["name"]?.stringValue ?? "", labels: labels, value: json["value"]?.doubleValue ?? .nan)
        }
    }
}
