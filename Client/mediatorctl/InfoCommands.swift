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

struct List: AsyncParsableCommand, PeopleViewVerb {
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

    @OptionGroup var view: PeopleView

    func validate() throws { try view.validate(with: options) }

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

struct Describe: AsyncParsableCommand, PeopleViewVerb {
    static let configuration = CommandConfiguration(
        commandName: "describe",
        abstract: "Show a target's actions: their params and results with their types, and its instances.",
        discussion: """
            On a terminal, the interface as a person reads it: the target and its description, \
            its state, mode and pids, then each action as a signature, \
            get(city: string, days?: integer 1…14 = 7) -> {temp: number}, with its description \
            and the $defs it names below it. name?: is an optional member, A | B one of several \
            types or values, [T] an array, {*: T} the members not listed, (...) params that are \
            not described; [stream] marks an action that answers with several responses, \
            [oneway] one that never answers. Long signatures are broken over lines at the \
            terminal's width. Otherwise (stdout not a terminal, or --json or --pretty) the \
            daemon's result as JSON, with the full schemas; --table gives the text anywhere.
            """
    )

    @OptionGroup var options: GlobalOptions
    @OptionGroup var view: PeopleView

    @Argument(help: "The target.")
    var target: String

    func validate() throws {
        try view.validate(with: options)
        guard NameRules.isValidTarget(target) else {
            throw ValidationError("invalid target name \"\(target)\": expected [A-Za-z][A-Za-z0-9_.-]*")
        }
    }

    func run() async throws {
        let (output, target, asTable) = (options.output, target, asTable)
        let result = try await options.withClient(wait: .timeout) { client in try await client.describe(target) }
        if asTable {
            Output.write(STDOUT_FILENO, InterfaceText.render(result, width: Terminal.columns(STDOUT_FILENO)))
        } else {
            output.result(result)
        }
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
