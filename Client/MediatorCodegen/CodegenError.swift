import MediatorInterface
import MediatorProtocol

/// Why an interface file cannot be turned into code: the member at fault,
/// by path (`actions[1] (list).result.properties.notes.items`), and the
/// reason; or, for a file that `interface check` refuses, its problems.
public struct CodegenError: Error, Hashable, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    /// What `interface check` says of the file, one problem each (empty when
    /// the file passed the check and generation itself failed).
    public var problems: [InterfaceProblem]

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
        problems = []
    }

    public init(_ problems: InterfaceProblems) {
        path = ""
        reason = problems.description
        self.problems = problems.problems
    }

    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }

    /// The interface as `interface check` reads it: generation accepts
    /// nothing the check refuses (a schema nested over 64 levels, say).
    static func checked(_ interface: JSONValue, file: String) throws(CodegenError) -> InterfaceFile {
        do {
            return try InterfaceFile(json: interface, file: file)
        } catch {
            throw CodegenError(error)
        }
    }
}
