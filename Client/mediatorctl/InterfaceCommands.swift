import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import MediatorInterface
import MediatorProtocol

/// `mediatorctl interface check|diff`: interface files, without a daemon.
struct InterfaceVerb: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "interface",
        abstract: "Check interface files (NAME.mediator.json) and compare two versions of one.",
        discussion: "See docs/interfaces.md for the file format and the compatibility rules.",
        subcommands: [InterfaceCheckVerb.self, InterfaceDiffVerb.self]
    )
}

struct InterfaceCheckVerb: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check interface files; print every problem as FILE: MEMBER: REASON on stderr.",
        discussion: """
            Prints nothing when every file is valid (as systemd-analyze verify does). \
            A file that cannot be read is a problem too. - reads one file from stdin \
            (for example the output of mediatorctl describe TARGET --json).

            EXIT STATUS
              0   every file is valid
              1   a problem in at least one file
              2   bad usage
            """
    )

    @Argument(help: ArgumentHelp("The interface files (- for stdin).", valueName: "file"))
    var files: [String]

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one interface file") }
        if files.filter({ $0 == "-" }).count > 1 { throw ValidationError("stdin (-) can be read only once") }
    }

    func run() throws {
        var problems: [InterfaceProblem] = []
        for path in files {
            switch InterfaceFileReader.read(path) {
            case .failure(let problem):
                problems.append(problem)
            case .success(let bytes):
                problems += InterfaceFile.check(bytes: bytes, file: InterfaceFileReader.name(path))
            }
        }
        guard problems.isEmpty else {
            Output.write(STDERR_FILENO, problems.map { Output.escaped($0.description) + "\n" }.joined())
            throw ExitCode(Output.Status.error)
        }
    }
}

struct InterfaceDiffVerb: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "List the changes from OLD to NEW and whether each breaks callers of OLD.",
        discussion: """
            One line per change on stdout: "breaking MEMBER: CHANGE" or "compatible MEMBER: CHANGE"; \
            --json (or --pretty) prints an array of {"breaking", "member", "change"} instead. A file with \
            problems is not compared: its problems go to stderr as interface check prints them.

            EXIT STATUS
              0   no change breaks callers (changes may be listed)
              1   at least one breaking change
              2   bad usage, a file that cannot be read or has problems
            """
    )

    @Argument(help: ArgumentHelp("The interface file callers were written against (- for stdin).", valueName: "old"))
    var old: String

    @Argument(help: ArgumentHelp("The new version of it (- for stdin).", valueName: "new"))
    var new: String

    /// For `--json` (a JSON array of the changes instead of lines), which
    /// the root command would take otherwise; the socket options go unused.
    @OptionGroup var options: GlobalOptions

    func validate() throws {
        if old == "-" && new == "-" { throw ValidationError("stdin (-) can be read only once") }
    }

    func run() throws {
        let oldFile = try Self.load(old)
        let newFile = try Self.load(new)
        let changes = InterfaceDiff.changes(from: oldFile, to: newFile)
        if options.json || options.pretty {
            options.output.result(.array(changes.map(\.json)))
        } else {
            Output.write(STDOUT_FILENO, changes.map { Output.escaped($0.description) + "\n" }.joined())
        }
        if changes.contains(where: \.breaking) { throw ExitCode(Output.Status.error) }
    }

    /// The file, or its problems on stderr and exit status 2.
    private static func load(_ path: String) throws -> InterfaceFile {
        let problems: [InterfaceProblem]
        switch InterfaceFileReader.read(path) {
        case .failure(let problem):
            problems = [problem]
        case .success(let bytes):
            do {
                return try InterfaceFile(bytes: bytes, file: InterfaceFileReader.name(path))
            } catch {
                problems = error.problems
            }
        }
        Output.write(STDERR_FILENO, problems.map { Output.escaped($0.description) + "\n" }.joined())
        throw ExitCode(Output.Status.usage)
    }
}

/// Reads an interface file's bytes for the pure MediatorInterface library.
enum InterfaceFileReader {
    /// How problems name a path (`<stdin>` for `-`).
    static func name(_ path: String) -> String { path == "-" ? "<stdin>" : path }

    static func read(_ path: String) -> Result<[UInt8], InterfaceProblem> {
        let descriptor = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(problem(path, "cannot be read: " + String(cString: strerror(errno)))) }
        defer { if descriptor != STDIN_FILENO { close(descriptor) } }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(problem(path, "cannot be read: " + String(cString: strerror(errno))))
            }
            if count == 0 { return .success(bytes) }
            bytes += chunk[0..<count]
            // Stops reading there, rather than reading all of a huge file first.
            if bytes.count > InterfaceFile.maxBytes { return .failure(InterfaceFile.tooLarge(file: name(path))) }
        }
    }

    private static func problem(_ path: String, _ reason: String) -> InterfaceProblem {
        InterfaceProblem(file: name(path), member: "", reason: reason)
    }
}
