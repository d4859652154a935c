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

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the targets: registered ones, and those the daemon can start from a manifest.",
        discussion: """
            On a terminal, a table: TARGET, STATE (running, activatable, starting, stopping, \
            failed, or invalid: its manifest was skipped, the problem shown as its description), \
            PID(S), UPTIME, CALLS (calls served), ACTIVATION (exec or unit; - for a \
            component that registered on its own) and DESCRIPTION, cut to the terminal's width; \
            then the skipped manifest files that no target stands for. \
            Otherwise (stdout not a terminal, or --json or --pretty) the daemon's result as JSON, \
            with each target's actions and instances. --table gives the table anywhere, uncut.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Flag(name: .long, help: "Print a table even when stdout is not a terminal.")
    var table = false

    func validate() throws {
        if table && (options.json || options.pretty) {
            throw ValidationError("--table excludes --json and --pretty")
        }
    }

    /// A table when asked for, or on a terminal unless JSON was asked for.
    var asTable: Bool {
        table || (!options.json && !options.pretty && Terminal.isTerminal(STDOUT_FILENO))
    }

    func run() async throws {
        let (output, asTable) = (options.output, asTable)
        let result = try await options.withClient(wait: .timeout) { client in try await client.list() }
        if asTable {
            Output.write(STDOUT_FILENO, TargetTable.render(result, width: Terminal.columns(STDOUT_FILENO)))
        } else {
            output.result(result)
        }
    }
}

struct Describe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "describe",
        abstract: "Show a target's action specs (params and result schemas) and instances.")

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The target.")
    var target: String

    func validate() throws {
        guard NameRules.isValidTarget(target) else {
            throw ValidationError("invalid target name \"\(target)\": expected [A-Za-z][A-Za-z0-9_.-]*")
        }
    }

    func run() async throws {
        let (output, target) = (options.output, target)
        let result = try await options.withClient(wait: .timeout) { client in try await client.describe(target) }
        output.result(result)
    }
}

struct Ping: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ping",
        abstract: "Check that the daemon answers; prints nothing, exits 0 if it does (69 if unreachable).")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await options.withClient(wait: .timeout) { client in try await client.ping() }
    }
}
