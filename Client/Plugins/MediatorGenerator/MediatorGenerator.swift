import Foundation
import PackagePlugin

/// Generates the Swift source of every `*.mediator.json` file in a target's
/// sources (`Notes.mediator.json` → `Notes.swift` in the plugin's work
/// directory), at build time, with `mediator-generate`.
@main
struct MediatorGenerator: BuildToolPlugin {
    static let suffix = ".mediator.json"

    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        guard let sources = target as? SourceModuleTarget else { return [] }
        let tool = try context.tool(named: "mediator-generate")
        let inputs = sources.sourceFiles.map(\.url).filter { $0.lastPathComponent.hasSuffix(Self.suffix) }
        // Sorted so that the commands are the same from one build to the next.
        return inputs.sorted { $0.path < $1.path }.map { input in
            let stem = String(input.lastPathComponent.dropLast(Self.suffix.count))
            let output = context.pluginWorkDirectoryURL.appendingPathComponent(stem + ".swift")
            return .buildCommand(
                displayName: "Generating \(stem).swift from \(input.lastPathComponent)",
                executable: tool.url,
                arguments: ["swift", input.path, output.path],
                inputFiles: [input],
                outputFiles: [output])
        }
    }
}
