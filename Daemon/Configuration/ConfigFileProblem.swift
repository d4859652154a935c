import MediatorProtocol

/// Why a config file (a component manifest, a policy file), or part of it,
/// was not loaded: the file, the member at fault when there is one (a path
/// such as `rules[0].allow.call[1]`), and the reason.
public struct ConfigFileProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var member: String?
    public var reason: String

    public init(file: String, member: String? = nil, reason: String) {
        self.file = file
        self.member = member
        self.reason = reason
    }

    /// `FILE: member "MEMBER": REASON`, or `FILE: REASON`.
    public var description: String {
        if let member { return "\(file): member \(JSONValue.string(member).jsonText): \(reason)" }
        return "\(file): \(reason)"
    }
}
