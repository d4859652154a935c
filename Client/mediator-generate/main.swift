import Foundation
import MediatorCodegen

// mediator-generate swift|python INPUT OUTPUT
//
// The generator alone, for the MediatorGenerator build-tool plugin (which
// should not have to build all of mediatorctl). The header names INPUT by its
// file name only, so that the output does not depend on where the package is.

let usage = "usage: mediator-generate swift|python INPUT.mediator.json OUTPUT\n"

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data(("mediator-generate: " + message).utf8))
    exit(status)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 3, let language = CodeGeneration.Language(rawValue: arguments[0]) else { fail(usage, status: 2) }
let (inputPath, outputPath) = (arguments[1], arguments[2])
let fileName = URL(fileURLWithPath: inputPath).lastPathComponent

// Read and checked as `mediatorctl interface check` does (size, JSON,
// problems), so that the build refuses what the check refuses.
let bytes: Data
do {
    bytes = try Data(contentsOf: URL(fileURLWithPath: inputPath))
} catch {
    fail("\(inputPath): \(error)\n", status: 1)
}

let source: String
do {
    source = try CodeGeneration.source(language, bytes: bytes, file: inputPath, headerName: fileName)
} catch {
    // A refused file: its problems, one a line, as the check prints them.
    fail(error.problems.isEmpty ? "\(inputPath): \(error)\n" : error.problems.map { "\($0)\n" }.joined(), status: 1)
}

do {
    // Unchanged output is not rewritten, so that what depends on it is not rebuilt.
    let existing = try? Data(contentsOf: URL(fileURLWithPath: outputPath))
    if existing != Data(source.utf8) {
        try Data(source.utf8).write(to: URL(fileURLWithPath: outputPath), options: .atomic)
    }
} catch {
    fail("\(outputPath): \(error)\n", status: 1)
}
