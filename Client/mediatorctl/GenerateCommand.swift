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
        var inputs: [(interface: JSONValue, name: String)] = []
        var failed = false
        if let liveTarget {
            let described = try await options.withClient(wait: .timeout) { client in try await client.describe(liveTarget) }
            inputs.append((described, "describe of \(liveTarget)"))
        } else {
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else {
                    Output.log("\(file): cannot read the file")
                    failed = true
                    continue
                }
                do {
                    inputs.append((try JSONParser.parse(data), URL(fileURLWithPath: file).lastPathComponent))
                } catch {
                    Output.log("\(file): not JSON: \(error)")
                    failed = true
                }
            }
        }
        let folder = URL(fileURLWithPath: output ?? FileManager.default.currentDirectoryPath)
        // Made when missing, as `mkdir -p` would: an output folder is where
        // generated code goes, not something the user must prepare.
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            Output.log("cannot make the output folder \(folder.path): \(error)")
            throw ExitCode(Output.Status.error)
        }
        for input in inputs {
            do {
                let (source, fileName) = try Self.generate(language, input.interface, name: input.name)
                let path = folder.appendingPathComponent(fileName)
                try Data(source.utf8).write(to: path, options: .atomic)
                Output.write(STDOUT_FILENO, path.path + "\n")
            } catch {
                Output.log("\(input.name): \(error)")
                failed = true
            }
        }
        if failed { throw ExitCode(Output.Status.error) }
    }

    /// The source and its file name (`Notes.swift`, `notes.py`).
    static func generate(_ language: Language, _ interface: JSONValue, name: String) throws(CodegenError)
        -> (source: String, fileName: String)
    {
        switch language {
        case .swift:
            let source = try SwiftGenerator.generate(interface: interface, fileName: name)
            return (source, SwiftGenerator.fileName(forTarget: interface["target"]?.stringValue ?? "Interface"))
        case .python:
            let source = try PythonGenerator.generate(interface: interface, fileName: name)
            return (source, PythonGenerator.fileName(forTarget: interface["target"]?.stringValue ?? "interface"))
        }
    }
}
