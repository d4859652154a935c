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
        abstract: "Print every request, response and event the daemon routes, one JSON line each.",
        discussion: """
            Each line has type (request, response or event), from and to (connection, pid, uid, \
            name), target or event, uptime_us (the daemon's monotonic clock), elapsed_us for a \
            response, and message, the line as the daemon sent it on. Needs the right to monitor \
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

    func run() async throws {
        let targets = targets, events = events
        try await followEvents(options, start: { client in
            let stream = try await client.subscribe(["mediator.monitor"])
            var params: [String: JSONValue] = [:]
            if !targets.isEmpty { params["targets"] = .array(targets.map { .string($0) }) }
            if !events.isEmpty { params["events"] = .array(events.map { .string($0) }) }
            _ = try await client.call(ProtocolConstants.daemonTarget, "monitor", params: .object(params))
            return stream
        }, line: { $0.data ?? .null })
    }
}
