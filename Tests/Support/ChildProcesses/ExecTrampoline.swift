import Glibc

/// `TOOL __exec PROGRAM ARGS...`: sets PR_SET_PDEATHSIG and becomes PROGRAM,
/// so that a program we do not own (mediatord, python3) dies with the tool too.
public enum ExecTrampoline {
    public static let verb = "__exec"

    /// Becomes the program when this process was started as the trampoline
    /// (never returns then); returns at once otherwise. First thing in main.swift.
    public static func runIfRequested(_ arguments: [String] = CommandLine.arguments) {
        guard arguments.count >= 3, arguments[1] == verb else { return }
        run(Array(arguments.dropFirst(2)))
    }

    public static func run(_ argv: [String]) -> Never {
        LinuxExtras.dieWithParent()
        let cArgs = argv.map { strdup($0) } + [nil]
        execv(argv[0], cArgs)
        perror("execv \(argv[0])")
        _exit(127)
    }
}
