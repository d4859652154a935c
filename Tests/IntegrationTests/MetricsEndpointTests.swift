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
            var port: String?
            try waitUntil("the metrics endpoint's port in the log\(daemon.process.logTail())") {
                guard let line = daemon.process.stderrLines.first(where: { $0.contains("metrics endpoint listening") }),
                    let range = line.range(of: #"address=127\.0\.0\.1:[0-9]+"#, options: .regularExpression)
                else { return false }
                port = String(line[range].split(separator: ":").last ?? "")
                return true
            }
            let text = try Scrape.curl(["http://127.0.0.1:\(try #require(port))/metrics"])
            try Scrape.lint(text)
            #expect(text.contains("mediator_uptime_seconds "))

            for address in ["0.0.0.0:9464", "192.168.1.1:9464", "example.com:80", "127.0.0.1:99999"] {
                let refused = try ChildProcess.run(
                    Paths.mediatord, ["--socket", world.directory.socket("refused"), "--metrics-listen", address])
                #expect(refused.status != 0 && refused.stderr.contains("--metrics-listen"), "\(address): \(refused)")
            }
        }
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
