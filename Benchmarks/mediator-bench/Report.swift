import Foundation

struct BenchReport: Codable {
    var mediatord: String
    var cpus: Int
    var payloadBytes: Int
    var calls: Int
    var warmup: Int
    var durationSeconds: Double
    var inFlight: Int
    var connections: Int
    var passes: [PassResult]
    var targets: TargetScalingResult?
}

enum Report {
    static func table(_ report: BenchReport) -> String {
        var lines: [String] = []
        lines.append("mediator-bench: target Bench, action echo, params {\"s\": \(report.payloadBytes)-byte string}; \(report.cpus) CPUs")
        lines.append("mediatord: \(report.mediatord)")
        let typed = report.passes.contains { $0.typedCodable }
            ? "hand-written Codable params and results (Foundation's coders)"
            : "params and results generated from BenchEcho.mediator.json"
        lines.append("brokered: raw POSIX-socket client and component (no library); library: MediatorClient and Component; typed: the same with \(typed);")
        lines.append("each on its own mediatord; each shape is a fresh client process")
        for pass in report.passes {
            lines.append("")
            lines.append(contentsOf: passTable(pass, report))
        }
        if let targets = report.targets {
            lines.append("")
            lines.append(contentsOf: targetsTable(targets))
        }
        return lines.joined(separator: "\n")
    }

    private static func targetsTable(_ scaling: TargetScalingResult) -> [String] {
        let pinning = scaling.pinnedCPU.map { "every process on CPU \($0)" } ?? "unpinned"
        var lines = [
            "== registered targets: \(scaling.inFlight) pipelined on one raw connection, each call to one of N targets "
                + "at random; a new mediatord per run; the better of the runs per N (\(pinning))",
            "targets     calls/s   vs 1 target   mediatord CPU   mediatord RSS   register N",
            String(repeating: "-", count: 78),
        ]
        let base = scaling.steps.first { $0.targets == 1 }?.result?.callsPerSecond
        for step in scaling.steps {
            let rate = step.result?.callsPerSecond
            let ratio = rate.flatMap { r in base.map { $0 > 0 ? "\(format(r / $0, 2))x" : "-" } } ?? "-"
            lines.append([
                pad(grouped(Double(step.targets)), 7),
                pad(rate.map(grouped) ?? "n/a", 11),
                pad(ratio, 13),
                pad(step.daemonCPUMicrosPerCall.map { "\(format($0, 1)) µs/call" } ?? "-", 15),
                pad(step.daemonRSSKiB.map(mib) ?? "-", 15),
                pad(step.registerSeconds.map { "\(format($0, 2)) s" } ?? "-", 12),
            ].joined(separator: " "))
            if let error = step.error { lines.append("error (\(step.targets) targets): \(error)") }
        }
        return lines
    }

    private static func passTable(_ pass: PassResult, _ report: BenchReport) -> [String] {
        let widths = [40, 9, 12, 12, 12, 12, 10, 24]
        func row(_ cells: [String]) -> String {
            var text = ""
            for (i, cell) in cells.enumerated() {
                text += i == 0 ? cell.padding(toLength: widths[i], withPad: " ", startingAt: 0) : pad(cell, widths[i])
                text += "  "
            }
            return String(text.reversed().drop(while: { $0 == " " }).reversed())
        }
        var lines = ["== pass: \(pass.name) (\(format(pass.wallSeconds, 1)) s)"]
        lines.append(row(["shape", "metric", "brokered", "library", "typed", "direct", "b/d", "mediatord CPU (raw/lib/typed)"]))
        lines.append(String(repeating: "-", count: widths.reduce(0, +) + 2 * (widths.count - 1)))

        for (index, shape) in Shape.allCases.enumerated() {
            let broker = pass.brokered.first { $0.shape == shape }
            let library = pass.library.first { $0.shape == shape }
            let typed = pass.typed.first { $0.shape == shape }
            let direct = pass.direct.first { $0.shape == shape }
            let label = "\(index + 1) " + shape.label(inFlight: report.inFlight, connections: report.connections)
            let cpuFigures = [broker, library, typed].compactMap { $0?.daemonCPUMicrosPerCall.map { format($0, 1) } }
            let cpu = cpuFigures.isEmpty ? "" : cpuFigures.joined(separator: " / ") + " µs/call"
            var metrics: [(String, (ShapeResult) -> Double?, Bool)] = []
            switch shape {
            case .latency:
                metrics = [("p50 µs", { $0.latencyMicros?.p50 }, false), ("p99 µs", { $0.latencyMicros?.p99 }, false)]
            case .pipelined, .connections:
                metrics = [("calls/s", { $0.callsPerSecond }, true)]
            }
            for (m, metric) in metrics.enumerated() {
                let b = broker?.result.flatMap(metric.1)
                let l = library?.result.flatMap(metric.1)
                let t = typed?.result.flatMap(metric.1)
                let d = direct?.result.flatMap(metric.1)
                let ratio = (b != nil && d != nil && d! > 0) ? "\(format(b! / d!, 2))x" : "-"
                lines.append(row([
                    m == 0 ? label : "",
                    metric.0,
                    b.map { metric.2 ? grouped($0) : format($0, 1) } ?? "n/a",
                    l.map { metric.2 ? grouped($0) : format($0, 1) } ?? (pass.library.isEmpty ? "-" : "n/a"),
                    t.map { metric.2 ? grouped($0) : format($0, 1) } ?? (pass.typed.isEmpty ? "-" : "n/a"),
                    d.map { metric.2 ? grouped($0) : format($0, 1) } ?? "n/a",
                    ratio,
                    m == 0 ? cpu : "",
                ]))
            }
        }

        for (mode, figures) in [("brokered", pass.daemon), ("library", pass.libraryDaemon), ("typed", pass.typedDaemon)] {
            guard let daemon = figures else { continue }
            let rss = daemon.vmRSSKiB.map { mib($0) } ?? "n/a"
            let hwm = daemon.vmHWMKiB.map { mib($0) } ?? "n/a"
            let perCall = daemon.cpuMicrosPerCall.map { "\(format($0, 1)) µs/call" } ?? "n/a"
            lines.append("mediatord (\(mode)) after the run: VmRSS \(rss) (peak VmHWM \(hwm)); CPU (utime+stime) "
                + "\(format(daemon.cpuSeconds, 2)) s over \(grouped(Double(daemon.calls))) calls = \(perCall)")
        }
        lines.append("b/d = brokered/direct (latency: >1 is slower; calls/s: <1 is fewer). "
            + "CPU per call counts warmup calls; /proc tick is 10 ms.")
        lines.append("1) \(grouped(Double(report.calls))) timed calls after \(grouped(Double(report.warmup))) warmup; "
            + "2) \(format(report.durationSeconds, 1)) s after \(grouped(Double(report.warmup))) warmup answers; "
            + "3) \(format(report.durationSeconds, 1)) s after \(max(report.warmup / max(report.connections, 1), 1)) warmup calls per connection")
        for (mode, outcomes) in [("brokered", pass.brokered), ("library", pass.library), ("typed", pass.typed), ("direct", pass.direct)] {
            for outcome in outcomes {
                if let error = outcome.error { lines.append("error (\(mode) \(outcome.shape.rawValue)): \(error)") }
                if outcome.result?.stoppedByTimeLimit == true {
                    lines.append("note (\(mode) \(outcome.shape.rawValue)): stopped by the phase time limit; fewer calls measured")
                }
            }
        }
        return lines
    }

    static func json(_ report: BenchReport) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(report) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    static func format(_ value: Double, _ decimals: Int) -> String {
        String(format: "%.\(decimals)f", value)
    }

    static func grouped(_ value: Double) -> String {
        let digits = String(Int(value.rounded()))
        var out = ""
        for (i, c) in digits.reversed().enumerated() {
            if i > 0 && i % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return String(out.reversed())
    }

    private static func mib(_ kib: Int) -> String { "\(format(Double(kib) / 1024, 1)) MiB" }
}
