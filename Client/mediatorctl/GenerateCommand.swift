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
import MediatorCodegen
import MediatorInterface
import MediatorProtocol

/// `mediatorctl generate swift|python FILE... [--output DIR] [--target T]`:
/// typed code from interface files, or from a live target's `describe`.
struct Generate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate",
        abstract: "Generate a typed Swift or Python client and service from interface files.",
        discussion: """
            Each FILE (NAME.mediator.json) gives TARGET.swift, or target.py (the target \
            lowercased, . and - as _), in --output (default: the current folder; made when missing); the \
            paths written are printed. With --target T, the interface is the live target's \
            mediator/describe instead of a file.

            The output is stable: the same interface gives the same bytes.

            Examples:
              mediatorctl generate swift Notes.mediator.json --output Sources/NotesAPI
              mediatorctl generate python --target Notes
            """
    )

    enum Language: String, ExpressibleByArgument, CaseIterable {
        case swift, python

        var generated: CodeGeneration.Language {
            switch self {
            case .swift: .swift
            case .python: .python
            }
        }
    }

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The language: swift or python.")
    var language: Language

    @Argument(help: ArgumentHelp("Interface files (NAME.mediator.json).", valueName: "file"))
    var files: [String] = []

    @Option(name: .long, help: ArgumentHelp("The folder to write into (default: the current folder).", valueName: "dir"))
    var output: String?

    @Option(name: .customLong("target"), help: ArgumentHelp(
        "Generate from this live target's describe instead of files.", valueName: "target"))
    var liveTarget: String?

    func validate() throws {
        if liveTarget == nil && files.isEmpty { throw ValidationError("give interface files, or --target T") }
        if liveTarget != nil && !files.isEmpty { throw ValidationError("--target and interface files exclude each other") }
        if let liveTarget, !NameRules.isValidTarget(liveTarget) {
            throw ValidationError("invalid target name \"\(liveTarget)\": expected [A-Za-z][A-Za-z0-9_.-]*")
        }
    }

    func run() async throws {
        // Read and checked as `interface check` reads them (CodeGeneration):
        // a file the check refuses is refused here with the same problems.
        var inputs: [(interface: InterfaceFile, headerName: String)] = []
        var problems: [InterfaceProblem] = []
        if let liveTarget {
            let described = try await options.withClient(wait: .timeout) { client in try await client.describe(liveTarget) }
            do {
                inputs.append((try InterfaceFile(json: described, file: "describe of \(liveTarget)"), "describe of \(liveTarget)"))
            } catch {
                problems += error.problems
            }
        } else {
            for file in files {
                switch InterfaceFileReader.read(file) {
                case .failure(let problem):
                    problems.append(problem)
                case .success(let bytes):
                    do {
                        let name = InterfaceFileReader.name(file)
                        inputs.append((try InterfaceFile(bytes: bytes, file: name), URL(fileURLWithPath: name).lastPathComponent))
                    } catch {
                        problems += error.problems
                    }
                }
            }
        }
        Output.write(STDERR_FILENO, problems.map { Output.escaped($0.description) + "\n" }.joined())
        var failed = !problems.isEmpty
        let folder = URL(fileURLWithPath: output ?? FileManager.default.currentDirectoryPath)
        // Made when missing, as `mkdir -p` would: an output folder is where
        // generated code goes, not something the user must prepare.
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            Output.log("cannot make the output folder \(folder.path): \(error)")
            throw ExitCode(Output.Status.error)
        }
        let language = self.language.generated
        for input in inputs {
            do {
                let source = try CodeGeneration.source(language, input.interface, headerName: input.headerName)
                let path = folder.appendingPathComponent(CodeGeneration.fileName(language, target: input.interface.target))
                try Data(source.utf8).write(to: path, options: .atomic)
                Output.write(STDOUT_FILENO, path.path + "\n")
            } catch {
                Output.log("\(input.interface.file): \(error)")
                failed = true
            }
        }
        if failed { throw ExitCode(Output.Status.error) }
    }
}
