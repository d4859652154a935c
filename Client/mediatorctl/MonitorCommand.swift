import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import MediatorClient
import MediatorProtocol

struct Monitor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Print every request, response and event the daemon routes, and every call it refuses.",
        discussion: """
            On a terminal, one line each: the wall-clock time it was received, the kind, from → to \
            (name[pid]), target/action or event, the id, elapsed for a response and, for an error, \
            its code and message (for example `09:12:03.420 refused cli[4103] → mediatord \
            Nobody/a id=8 code=target_not_found (...)`). Otherwise (stdout not a terminal, or --json \
            or --pretty) one JSON object each, with type (request, response, event, or refused for \
            a call the daemon answered itself: forbidden, unknown target or action, invalid \
            params, a limit), from and to (connection, pid, uid, name; no to for refused), target \
            and, for refused, action, or event, uptime_us (microseconds since the daemon \
            started), elapsed_us for a response, and message, the line as the daemon sent it on \
            (for refused, its error answer). Needs the right to monitor \
            (root or the daemon's own user by default; see docs/policy.md). Runs until interrupted \
            (exit 0) or until the daemon goes away (exit 69).
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(name: .customLong("target"), help: "Only calls to targets matching this pattern (repeatable).")
    var targets: [String] = []

    @Option(name: .customLong("event"), help: "Only events matching this pattern (repeatable).")
    var events: [String] = []

    func validate() throws {
        for pattern in targets + events where !NameRules.isValidEventPattern(pattern) {
            throw ValidationError("invalid pattern \"\(pattern)\": an exact name, prefix.* or *")
        }
    }

    /// The one-line form: on a terminal unless JSON was asked for.
    var asLines: Bool {
        options.peopleByDefault
    }

    func run() async throws {
        let targets = targets, events = events
        try await followEvents(options, start: { client in
            let stream = try await client.events(["mediator.monitor"])
            var params: [String: JSONValue] = [:]
            if !targets.isEmpty { params["targets"] = .array(targets.map { .string($0) }) }
            if !events.isEmpty { params["events"] = .array(events.map { .string($0) }) }
            _ = try await client.call(target: ProtocolConstants.daemonTarget, action: "monitor", params: .object(params))
            return stream
        }, line: { $0.data ?? .null },
        text: asLines ? { MonitorLine.render($0.data ?? .null, at: .now()) } : nil)
    }
}
