import MediatorProtocol

/// Why a config file (a component manifest, a policy file), or part of it,
/// was not loaded: the file, the member at fault when there is one (a path
/// such as `rules[0].allow.call[1]`), and the reason.
package struct ConfigFileProblem: Error, Sendable, Equatable, CustomStringConvertible {
    package var file: String
    package var member: String?
    package var reason: String

    package init(file: String, member: String? = nil, reason: String) {
        self.file = file
        self.member = member
        self.reason = reason
    }

    /// `FILE: member "MEMBER": REASON`, or `FILE: REASON`.
    package var description: String {
        if let member { return "\(file): member \(JSONValue.string(member).jsonText): \(reason)" }
        return "\(file): \(reason)"
    }

    /// `{"file", "member"?, "reason"}`: how `list`, `status` and
    /// `mediatorctl verify --json` give a problem.
    package var json: JSONValue {
        var members: [String: JSONValue] = ["file": .string(file), "reason": .string(reason)]
        if let member { members["member"] = .string(member) }
        return .object(members)
    }

    /// Reads ``json``'s form back; nil unless `file` and `reason` are strings.
    package init?(json: JSONValue) {
        guard let file = json["file"]?.stringValue, let reason = json["reason"]?.stringValue else { return nil }
        self.init(file: file, member: json["member"]?.stringValue, reason: reason)
    }
}
