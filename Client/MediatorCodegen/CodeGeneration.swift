import MediatorInterface
import MediatorProtocol

/// What `mediatorctl generate`, `mediator-generate` and the build-tool
/// plugin share: a file is read and checked exactly as `interface check`
/// reads it (the same size bound, JSON parser and checker, the same
/// problems), then generated.
public enum CodeGeneration {
    public enum Language: String, CaseIterable, Sendable {
        case swift, python
    }

    /// The source for a file's bytes; `file` names it in problems (as given
    /// to `interface check`), `headerName` in the generated header.
    public static func source(_ language: Language, bytes: some Collection<UInt8>, file: String, headerName: String)
        throws(CodegenError) -> String
    {
        let interface: InterfaceFile
        do {
            interface = try InterfaceFile(bytes: bytes, file: file)
        } catch {
            throw CodegenError(error)
        }
        return try source(language, interface, headerName: headerName)
    }

    /// The source for an interface already read (and so checked).
    public static func source(_ language: Language, _ interface: InterfaceFile, headerName: String)
        throws(CodegenError) -> String
    {
        switch language {
        case .swift: try SwiftGenerator.generate(interface, fileName: headerName)
        case .python: try PythonGenerator.generate(interface, fileName: headerName)
        }
    }

    /// The output file's name for a target: `Notes.swift`, `notes.py`.
    public static func fileName(_ language: Language, target: String) -> String {
        switch language {
        case .swift: SwiftGenerator.fileName(forTarget: target)
        case .python: PythonGenerator.fileName(forTarget: target)
        }
    }
}
