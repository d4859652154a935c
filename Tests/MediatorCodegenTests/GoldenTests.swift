import Foundation
import MediatorCodegen
import MediatorProtocol
import Testing

/// The generators' output for each interface under `Golden/` must be
/// byte-identical to the files committed beside it. `UPDATE_GOLDEN=1 swift
/// test --filter MediatorCodegenTests` rewrites them (review the diff).
///
/// The golden Swift files are also compiled as part of this test target, so
/// a change that makes the output not compile fails the build.
@Suite struct GoldenTests {
    /// Keep in step with `GoldenFiles.names` in Package.swift.
    static let cases = ["Notes", "Shapes", "Keywords", "Streams", "Recursive", "Bounds", "Alternatives", "Descriptors"]

    static let goldenDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Golden")

    static func interface(_ name: String) throws -> JSONValue {
        let data = try Data(contentsOf: goldenDirectory.appendingPathComponent("\(name).mediator.json"))
        return try JSONParser.parse(data)
    }

    enum Language: String, CaseIterable, Sendable {
        case swift, python

        func outputName(_ name: String) -> String {
            self == .swift ? "\(name).swift" : "\(name.lowercased()).py"
        }

        func generate(_ interface: JSONValue, fileName: String) throws(CodegenError) -> String {
            switch self {
            case .swift: try SwiftGenerator.generate(interface: interface, fileName: fileName)
            case .python: try PythonGenerator.generate(interface: interface, fileName: fileName)
            }
        }
    }

    @Test(arguments: cases, Language.allCases)
    func outputMatchesGolden(name: String, language: Language) throws {
        let interface = try Self.interface(name)
        let generated = try language.generate(interface, fileName: "\(name).mediator.json")
        let goldenURL = Self.goldenDirectory.appendingPathComponent(language.outputName(name))
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
            try Data(generated.utf8).write(to: goldenURL)
            return
        }
        let golden = try String(contentsOf: goldenURL, encoding: .utf8)
        #expect(generated == golden, "\(goldenURL.lastPathComponent) differs; UPDATE_GOLDEN=1 rewrites it")
    }

    @Test(arguments: cases, Language.allCases)
    func outputIsStable(name: String, language: Language) throws {
        let interface = try Self.interface(name)
        let first = try language.generate(interface, fileName: "\(name).mediator.json")
        // Parse again: a new dictionary may iterate in another order.
        let second = try language.generate(try Self.interface(name), fileName: "\(name).mediator.json")
        #expect(Array(first.utf8) == Array(second.utf8))
    }

    @Test(arguments: cases)
    func goldenPythonCompiles(name: String) throws {
        let path = Self.goldenDirectory.appendingPathComponent(Language.python.outputName(name)).path
        let (status, message) = try Self.python(["-m", "py_compile", path])
        #expect(status == 0, "\(path) does not compile: \(message)")
    }

    /// The golden modules run against a stand-in `mediator` package
    /// (`PythonCheck/`): wire names, enums, streams, oneway, the service side.
    @Test func goldenPythonRuns() throws {
        let check = Self.goldenDirectory.deletingLastPathComponent().appendingPathComponent("PythonCheck")
        let (status, message) = try Self.python(
            [check.appendingPathComponent("check_generated.py").path],
            path: [check.path, Self.goldenDirectory.path])
        #expect(status == 0, "check_generated.py failed: \(message)")
    }

    /// Runs python3; returns its exit status and stderr.
    static func python(_ arguments: [String], path: [String] = []) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var environment = ProcessInfo.processInfo.environment
        // Bytecode goes to a scratch directory, not the source tree.
        environment["PYTHONPYCACHEPREFIX"] = FileManager.default.temporaryDirectory
            .appendingPathComponent("mediator-codegen-pycache").path
        if !path.isEmpty { environment["PYTHONPATH"] = path.joined(separator: ":") }
        process.environment = environment
        process.arguments = ["python3"] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, message)
    }
}
