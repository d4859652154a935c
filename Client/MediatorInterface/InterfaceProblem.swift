/// One thing wrong with an interface file: the file, the member at fault as
/// a path (`actions[2].params.properties.due.type`; empty when the whole file
/// is at fault) and the reason.
public struct InterfaceProblem: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var member: String
    public var reason: String

    public init(file: String, member: String, reason: String) {
        self.file = file
        self.member = member
        self.reason = reason
    }

    /// `FILE: MEMBER: REASON`, or `FILE: REASON` when no member is at fault.
    public var description: String {
        member.isEmpty ? "\(file): \(reason)" : "\(file): \(member): \(reason)"
    }
}

/// Every problem of an interface file that could not be read, in file order.
public struct InterfaceProblems: Error, Sendable, Hashable, CustomStringConvertible {
    public var problems: [InterfaceProblem]

    public init(_ problems: [InterfaceProblem]) {
        self.problems = problems
    }

    /// One problem per line.
    public var description: String { problems.map(\.description).joined(separator: "\n") }
}
