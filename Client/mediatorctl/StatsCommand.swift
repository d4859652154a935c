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

struct Stats: AsyncParsableCommand, PeopleViewVerb {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Show what the broker counted: calls, latencies, errors, refusals, slow calls.",
        discussion: """
            One snapshot of mediator/stats (docs/daemon.md, "Statistics"). On a terminal, a \
            summary: the daemon's totals, then each target and its actions with CALLS, CALLS/S \
            (since the daemon started), P50 and P99 latency, ERRORS and IN FLIGHT, then the \
            slow calls. Otherwise (stdout not a terminal, or --json or --pretty) the daemon's \
            result as JSON; --table gives the summary anywhere. With TARGET, only that target. \
            Reading statistics needs the policy's monitor grant (root and the daemon's user by \
            default): forbidden (exit 1) otherwise.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "Only this target.")
    var target: String?

    @OptionGroup var view: PeopleView

    func validate() throws {
        try view.validate(with: options)
        if let target, !NameRules.isValidTarget(target) {
            throw ValidationError("invalid target name \"\(target)\": expected [A-Za-z][A-Za-z0-9_.-]*")
        }
    }

    func run() async throws {
        let (output, asTable) = (options.output, asTable)
        let target = self.target
        // All pages of targets, in one answer (MediatorClient.stats follows them).
        let result = try await options.withClient(wait: .timeout) { client in
            try await client.stats(target: target)
        }
        if asTable {
            Output.write(STDOUT_FILENO, StatsSummary.render(result))
        } else {
            output.result(result)
        }
    }
}
