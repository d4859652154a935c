import Foundation
import MediatorCodegen
import MediatorProtocol
import Testing

/// Every name of an interface maps to an identifier in both languages (issue
/// 23, point 14): `²` is not a Python identifier character, and a target
/// named like a keyword gave a module that `import` cannot name. The golden
/// `Keywords` interface holds the member names (its Swift is compiled with
/// this target, its Python by GoldenTests); here, the targets.
@Suite struct IdentifierTests {
    @Test(
        "A target named like a keyword or an imported module gives a module that import can name",
        arguments: ["class", "import", "None", "typing", "enum", "mediator", "Notes"])
    func moduleImports(target: String) throws {
        let name = PythonGenerator.fileName(forTarget: target)
        let module = String(name.dropLast(".py".count))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mediator-identifiers-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = try PythonGenerator.generate(interface: ["target": .string(target), "actions": ["a"]], fileName: "x")
        try Data(source.utf8).write(to: folder.appendingPathComponent(name))
        let check = GoldenTests.goldenDirectory.deletingLastPathComponent().appendingPathComponent("PythonCheck")
        let (status, message) = try GoldenTests.python(
            ["-c", "import \(module); assert \(module).INTERFACE[\"target\"] == \(JSONValue.string(target).jsonText)"],
            path: [check.path, folder.path])
        #expect(status == 0, "import \(module) failed: \(message)")
    }
}
