import MediatorProtocol

/// An interface file, `NAME.mediator.json`: one target's description and
/// action specs, in the shape `register` and `describe` speak (see
/// docs/interfaces.md).
///
/// Pure: the caller reads the file and passes its name and bytes, so the
/// same code serves `mediatorctl`, the daemon's manifests and generators.
public struct InterfaceFile: Sendable, Equatable {
    /// The name problems give for the file.
    public var file: String
    public var target: String
    public var description: String?
    public var actions: [ActionSpec]
    /// The file's JSON as it was given (members `ActionSpec` does not keep,
    /// such as `more` and `oneway`, are here).
    public var json: JSONValue

    /// Larger files are refused (by `interface check`, `generate` and the
    /// generator alike) rather than read into memory and compiled.
    public static let maxBytes = 16 << 20

    /// The problem of a file over ``maxBytes``.
    public static func tooLarge(file: String) -> InterfaceProblem {
        InterfaceProblem(file: file, member: "", reason: "is larger than \(maxBytes) bytes")
    }

    /// Reads a file; throws every problem found when there is any.
    public init(bytes: some Collection<UInt8>, file: String) throws(InterfaceProblems) {
        guard bytes.count <= Self.maxBytes else { throw InterfaceProblems([Self.tooLarge(file: file)]) }
        let json: JSONValue
        do {
            json = try JSONParser.parse(bytes)
        } catch {
            throw InterfaceProblems([InterfaceProblem(file: file, member: "", reason: "is not valid JSON: \(error)")])
        }
        try self.init(json: json, file: file)
    }

    /// Reads parsed JSON (for example a `describe` result); throws every
    /// problem found when there is any.
    public init(json: JSONValue, file: String) throws(InterfaceProblems) {
        var checker = InterfaceChecker(file: file)
        guard let read = checker.checkFile(json) else { throw InterfaceProblems(checker.problems) }
        self.file = file
        self.target = read.target
        self.description = read.description
        self.actions = read.actions
        self.json = json
    }

    /// Every problem of a file, in file order; empty when it is valid.
    public static func check(bytes: some Collection<UInt8>, file: String) -> [InterfaceProblem] {
        do {
            _ = try InterfaceFile(bytes: bytes, file: file)
            return []
        } catch {
            return error.problems
        }
    }

    /// Every problem of parsed JSON; empty when it is valid.
    public static func check(json: JSONValue, file: String) -> [InterfaceProblem] {
        var checker = InterfaceChecker(file: file)
        _ = checker.checkFile(json)
        return checker.problems
    }

    /// Each action's spec as the file gives it, in the object form (a bare
    /// name becomes `{"name": NAME}`), in file order.
    public var actionObjects: [[String: JSONValue]] {
        (json["actions"]?.arrayValue ?? []).map { item in
            if let name = item.stringValue { return ["name": .string(name)] }
            return item.objectValue ?? [:]
        }
    }
}
