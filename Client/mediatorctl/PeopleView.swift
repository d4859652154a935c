import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// `--table`, of the verbs that print a view for people (a table, a
/// summary, systemctl-like text) on a terminal and JSON otherwise:
/// `list`, `describe`, `status`, `stats`.
struct PeopleView: ParsableArguments {
    @Flag(name: .customLong("table"), help: "Print the view for people even when stdout is not a terminal.")
    var forced = false

    /// Called from the verb's `validate`, which sees the global options.
    func validate(with options: GlobalOptions) throws {
        if forced && (options.json || options.pretty) {
            throw ValidationError("--table excludes --json and --pretty")
        }
    }

    /// The view for people when asked for, or on a terminal unless JSON was.
    func chosen(_ options: GlobalOptions) -> Bool { forced || options.peopleByDefault }
}

extension GlobalOptions {
    /// Whether a verb that can print for people does so unasked: stdout is a
    /// terminal and neither `--json` nor `--pretty` was given.
    var peopleByDefault: Bool { !json && !pretty && Terminal.isTerminal(STDOUT_FILENO) }
}

/// A verb with a view for people.
protocol PeopleViewVerb {
    var options: GlobalOptions { get }
    var view: PeopleView { get }
}

extension PeopleViewVerb {
    /// Whether to print the view for people rather than JSON.
    var asTable: Bool { view.chosen(options) }
}
