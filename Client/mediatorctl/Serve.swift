import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import MediatorProtocol

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a target by running a program for each call (like rpcd exec plugins).",
        discussion: """
            Each call runs PROGRAM ACTION with the params JSON on stdin, and \
            MEDIATOR_CALLER_PID, MEDIATOR_CALLER_UID, MEDIATOR_CALLER_GID (and \
            MEDIATOR_CALLER_NAME, MEDIATOR_TARGET, MEDIATOR_ACTION) in its environment. \
            JSON on stdout is the result; empty stdout is null; other text is the result \
            as a trimmed string. A non-zero exit is the error exec_failed, with stderr as \
            its message and {"status": N} as its data. A cancelled call (timeout, \
            mediator.cancel) terminates the program's process group.

            Without --action, every action reaches the program (a notFound catch-all); \
            a call whose action name breaks the name rules is answered invalid_params \
            and the program is not run. \
            Logs "serving TARGET" on stderr once registered, and registers again if the \
            daemon restarts. SIGINT or SIGTERM stops it (exit 0).

            Example:
              mediatorctl serve Greeter --exec ./greeter.sh --action hello --action fail
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The target to register.")
    var target: String

    @Option(name: .long, help: ArgumentHelp("The program to run for each call.", valueName: "program"))
    var exec: String

    @Option(name: .customLong("action"), help: ArgumentHelp(
        "An action to declare (repeatable; default: all, through notFound).", valueName: "name"))
    var actions: [String] = []

    @Option(name: .long, help: ArgumentHelp("The target's description.", valueName: "text"))
    var description: String?

    @Flag(name: .long, help: "Join a pool of instances rather than registering exclusively.")
    var pool = false

    func validate() throws {
        guard NameRules.isValidTarget(target), target != ProtocolConstants.daemonTarget else {
            throw ValidationError("invalid target name \"\(target)\": expected [A-Za-z][A-Za-z0-9_.-]*, not mediator")
        }
        for action in actions where !NameRules.isValidAction(action) {
            throw ValidationError("invalid action name \"\(action)\": expected [A-Za-z_][A-Za-z0-9_.-]*")
        }
        guard ExecServer.resolve(exec) != nil else {
            throw ValidationError("--exec: \(exec) is not an executable file")
        }
    }

    func run() async throws {
        guard let program = ExecServer.resolve(exec) else {
            throw ValidationError("--exec: \(exec) is not an executable file")
        }
        // A program that exits without reading its stdin must not kill us.
        Signals.catchWithoutAction(SIGPIPE)
        Signals.onTerminate {
            Children.shared.terminateAll()
            Glibc.exit(0)
        }
        var seen = Set<String>()
        let socketPath: String
        do { socketPath = try options.socketPath } catch { throw options.output.fail(error) }
        let server = ExecServer(
            target: target, program: program, actions: actions.filter { seen.insert($0).inserted },
            description: description, pool: pool, socketPath: socketPath, name: options.name)
        do {
            try await server.run()
        } catch let error as MediatorError {
            throw options.output.fail(error)
        }
    }
}
