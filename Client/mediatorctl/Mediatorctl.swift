import ArgumentParser
import MediatorProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The root command: a table of verbs, like `varlinkctl` and `busctl`.
struct Mediatorctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mediatorctl",
        abstract: "Talk to mediatord, the local IPC broker: call targets, watch events, serve a program.",
        discussion: """
            Every verb takes, before or after the verb, --socket PATH (else $MEDIATOR_SOCKET, else \
            /run/mediator/mediator.sock; --user for $XDG_RUNTIME_DIR/mediator/mediator.sock), \
            --timeout SECONDS (default 30), --name NAME (the name sent in hello), and \
            --json / --pretty (indented on a terminal, compact otherwise). On a terminal, list, \
            stats, describe and status print for people instead (a table, a summary, signatures, \
            systemctl-like status), unless --json or --pretty is given (--table: that view anywhere).

            Params for call and stream: one JSON object ('{"n": 5}'), or key=value words, \
            typed from the action's params schema (asked of describe: a string member takes \
            value=1 as "1", an integer one as 1, a bad value is bad usage), and where the schema \
            says nothing JSON when they parse as JSON and strings otherwise (n=5 is 5, \
            name=bob is "bob", s='"5"' is "5"); key:=json is always JSON; or - to read a JSON \
            object from stdin. --fd FILE or --fd N (the shell's descriptor N) sends a file \
            descriptor, named {"$fd": I} in the params; descriptors that come back are \
            printed after the result or saved with --save-fds DIR (mediatorctl call --help).

            Results go to stdout. An error prints "mediatorctl: CODE: message" on stderr, \
            and its data as JSON on a second line.

            EXIT STATUS
              0   a result
              1   an error reply, or no reply within --timeout (the code is on stderr)
              2   bad usage
              65  verify: a problem in a manifest or policy file (EX_DATAERR)
              69  the daemon is unreachable or went away before replying (EX_UNAVAILABLE)

            Shell completion: mediatorctl --generate-completion-script bash (or zsh, fish); \
            it completes the target and action of call and stream from the running daemon.
            """,
        // The same version as `mediatord --version` (one constant in MediatorProtocol).
        version: MediatorVersion.current,
        subcommands: [
            Call.self, StreamCommand.self, Open.self, List.self, Describe.self, Ping.self,
            Start.self, Stop.self, Status.self, DaemonReexec.self, Stats.self, Top.self, Listen.self, Emit.self, Monitor.self, Serve.self,
            InterfaceVerb.self, Generate.self, Verify.self,
        ]
    )

    /// The same group as each verb's: the options may come before the verb
    /// (`mediatorctl --socket S call ...`) or after it.
    @OptionGroup var options: GlobalOptions

    /// Like ArgumentParser's own `main`, except that usage errors exit with
    /// status 2 rather than 64 (EX_USAGE), as in busctl and varlinkctl.
    /// (Named apart from `main()`, which `main.swift` would resolve to the
    /// synchronous one of `ParsableCommand`.)
    static func start() async {
        do {
            var command = try await asyncParseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .validationFailure {
                Output.write(STDERR_FILENO, fullMessage(for: error) + "\n")
                Glibc.exit(Output.Status.usage)
            }
            exit(withError: error)
        }
    }
}
