import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import MediatorConfiguration
import MediatorProtocol

/// `mediatorctl verify`: manifest and policy files checked before they are
/// installed, without a daemon, with the daemon's own parsers.
struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check component manifests and policy files; print every problem as FILE: member \"MEMBER\": REASON on stderr.",
        discussion: """
            Reads each file as mediatord reads it, without a daemon, and prints nothing when \
            every file is valid (as systemd-analyze verify does). A folder is checked as the \
            daemon walks it (its *.json files; two files for one target are a problem). \
            Whether a path holds manifests or policy files: --manifest or --policy; else the \
            folder's name (components.d, policy.d: the folder itself, or the one a file is in); \
            else the file's content (an object with "rules" is a policy file, anything else a \
            manifest). An interface file a manifest names must exist and pass interface check; \
            a policy file must not be writable by others, and the users and groups its rules \
            name must exist here. An empty file is valid (it masks). --json (or --pretty) \
            prints the problems as a JSON array of {"file", "member", "reason"} on stdout.

            EXIT STATUS
              0   every file is valid
              2   bad usage
              65  a problem in at least one file (EX_DATAERR)
            """
    )

    @Argument(
        help: ArgumentHelp("Manifest or policy files, or folders of them.", valueName: "path"),
        completion: .file())
    var paths: [String]

    @Flag(name: .long, help: "Read every path as component manifests.")
    var manifest = false

    @Flag(name: .long, help: "Read every path as policy files.")
    var policy = false

    /// For `--json` and `--pretty`; the socket options go unused.
    @OptionGroup var options: GlobalOptions

    func validate() throws {
        if paths.isEmpty { throw ValidationError("give at least one file or folder") }
        if manifest && policy { throw ValidationError("--manifest and --policy exclude each other") }
    }

    var kind: ConfigFileKind? { manifest ? .manifest : policy ? .policy : nil }

    func run() throws {
        let check = ConfigFileCheck()
        let problems = paths.flatMap { check.problems($0, kind: kind) }
        if options.json || options.pretty {
            options.output.result(.array(problems.map(\.json)))
        } else {
            Output.write(STDERR_FILENO, problems.map { Output.escaped($0.description) + "\n" }.joined())
        }
        if !problems.isEmpty { throw ExitCode(Output.Status.dataError) }
    }
}
