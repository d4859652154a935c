// Checking a value against a schema's nodes. The broker does it on its only
// loop, for every call and result of an action with a schema, so it costs
// about the size of the value whatever the size of the schema (issue 23):
// an `enum` is a set lookup, an object's members are looked up by name, and
// the path of a member is built only for the one that failed.
extension Schema {
    struct Checker {
        let scope: Scope?
        /// Work done: one step per value checked against a schema and per
        /// member looked up. Tests measure this rather than time.
        private(set) var steps = 0
        /// The most steps allowed, when the schema has alternatives
        /// (``Schema/maxCheckStepsPerElement``); nil for no limit.
        let budget: Int?
        /// The `fds` of the message checked: a descriptor's index is below it.
        let fds: Int

        init(scope: Scope?, budget: Int? = nil, fds: Int = 0) {
            self.scope = scope
            self.budget = budget
            self.fds = max(fds, 0)
        }

        mutating func check(_ value: JSONValue, against schema: Node, depth: Int) -> Problem? {
            steps += 1
            if let budget, steps > budget { return Problem(.tooCostly) }
            var node = schema
            if let reference = node.reference {
                // Scope.resolved skips chains of `$ref`s: one hop, whatever their length.
                guard let scope else { return nil }
                node = scope.resolved[reference.index]
            }
            let kind = Kind(of: value)
            if node.typeMask != 0 && !kind.isAccepted(by: node.typeMask) {
                return Problem(.wrongType(expected: node.typeNames ?? [], got: kind))
            }
            if let allowed = node.allowed, !allowed.contains(value) {
                return Problem(.notAllowedValue(allowed.expectation))
            }
            if node.isDescriptor { return checkDescriptor(value, nullable: node.typeMask & Kind.null.bit != 0) }
            if let bounds = node.bounds, let reason = bounds.check(value) { return Problem(reason) }
            if let alternatives = node.alternatives,
                let problem = checkAlternatives(value, alternatives, depth: depth)
            {
                return problem
            }
            switch value {
            case .object(let members):
                return checkMembers(members, of: node, depth: depth)
            case .array(let elements):
                guard let items = node.items else { return nil }
                if depth >= maxValueDepth, !elements.isEmpty { return Problem(.tooDeep) }
                for (index, element) in elements.enumerated() {
                    if let problem = check(element, against: items, depth: depth + 1) {
                        return problem.inside(.index(index))
                    }
                }
                return nil
            default:
                return nil
            }
        }

        /// Looks each member up in the schema, or each declared property up
        /// in the value when there are fewer of those and extra members do
        /// not matter. The member reported is the first by name among the
        /// declared ones that failed, else among the others, whatever the
        /// order of the dictionaries.
        private mutating func checkMembers(_ members: [String: JSONValue], of node: Node, depth: Int) -> Problem? {
            for name in node.required where members[name] == nil {
                return Problem(.missingRequired(name))
            }
            if depth >= maxValueDepth, !members.isEmpty { return Problem(.tooDeep) }
            var declared: (name: String, problem: Problem)?
            var extra: (name: String, problem: Problem)?
            if case .allowed = node.additional, node.properties.count < members.count {
                for (name, schema) in node.properties {
                    steps += 1
                    guard let member = members[name],
                        let problem = check(member, against: schema, depth: depth + 1)
                    else { continue }
                    Self.keepFirst(&declared, name, problem)
                }
            } else {
                for (name, member) in members {
                    steps += 1
                    if let schema = node.properties[name] {
                        if let problem = check(member, against: schema, depth: depth + 1) {
                            Self.keepFirst(&declared, name, problem)
                        }
                        continue
                    }
                    // Extra members are reported only when no declared one failed.
                    guard declared == nil else { continue }
                    switch node.additional {
                    case .allowed:
                        continue
                    case .forbidden:
                        Self.keepFirst(&extra, name, Problem(.memberNotAllowed))
                    case .schema(let schema):
                        if let problem = check(member, against: schema, depth: depth + 1) {
                            Self.keepFirst(&extra, name, problem)
                        }
                    }
                }
            }
            guard let failed = declared ?? extra else { return nil }
            return failed.problem.inside(.member(failed.name))
        }

        /// `{"$fd": I}`, nothing else, with 0 ≤ I < ``fds``; or null when the
        /// schema's `type` allows it. Its other keywords do not apply: the
        /// value stands for the descriptor, not for data.
        private func checkDescriptor(_ value: JSONValue, nullable: Bool) -> Problem? {
            if value.isNull, nullable { return nil }
            guard case .object(let members) = value, members.count == 1,
                let reference = members[FileDescriptorReferences.member]
            else {
                return Problem(.notDescriptor(got: Kind(of: value)))
            }
            guard let index = reference.intValue else { return Problem(.notDescriptor(got: Kind(of: value))) }
            guard index >= 0, index < fds else { return Problem(.descriptorOutOfRange(index, fds: fds)) }
            return nil
        }

        private static func keepFirst(_ first: inout (name: String, problem: Problem)?, _ name: String, _ problem: Problem) {
            if first.map({ name < $0.name }) ?? true { first = (name, problem) }
        }
    }

    /// Why a value did not match, and where. The path is collected on the
    /// way back up from the member that failed, and turned into text once.
    struct Problem {
        enum Reason {
            case wrongType(expected: [String], got: Kind)
            /// The text is ``AllowedValues/expectation``, built at `register`.
            case notAllowedValue(String)
            case missingRequired(String)
            case memberNotAllowed
            /// `expected at least 3 characters, got 2`: the bound, then what the value has.
            case outOfRange(String, got: String)
            case tooDeep
            /// No schema of `anyOf`/`oneOf` matched; `first` is why the first did not.
            indirect case noAlternative(keyword: String, count: Int, first: Problem)
            /// Two schemas of a `oneOf` matched (their indexes).
            case severalAlternatives(Int, Int)
            /// Checking would exceed ``Checker/budget``.
            case tooCostly
            /// Not `{"$fd": I}` with an integer I, where a descriptor is declared.
            case notDescriptor(got: Kind)
            /// `{"$fd": I}` with I outside 0 ..< the message's `fds`.
            case descriptorOutOfRange(Int64, fds: Int)
        }

        typealias Step = Schema.PathStep

        let reason: Reason
        /// From the member that failed up to the value checked.
        private var reversedPath: [Step] = []

        init(_ reason: Reason) { self.reason = reason }

        func inside(_ step: Step) -> Problem {
            var outer = self
            outer.reversedPath.append(step)
            return outer
        }

        /// `params.tags[2]: expected one of ["a","b"]`, for a value checked as `root`.
        func message(root: String) -> String {
            let text = Schema.path(root, reversedPath)
            switch reason {
            case .wrongType(let expected, let kind):
                return text + ": expected \(expected.joined(separator: " or ")), got \(kind.name)"
            case .notAllowedValue(let expectation):
                return text + ": " + expectation
            case .missingRequired(let name):
                return text + ": missing required member \(quoted(name))"
            case .memberNotAllowed:
                return text + ": member not allowed"
            case .outOfRange(let bound, let got):
                return text + ": expected \(bound), got \(got)"
            case .tooDeep:
                return text + ": nested too deeply to check"
            case .noAlternative(let keyword, let count, let first):
                return text + ": matches none of the \(count) schemas of \(quoted(keyword)) (the first: "
                    + first.message(root: text) + ")"
            case .severalAlternatives(let first, let second):
                return text + ": matches more than one schema of \"oneOf\" (\(first) and \(second))"
            case .tooCostly:
                return text + ": too costly to check against this schema's \"anyOf\"/\"oneOf\""
            case .notDescriptor(let kind):
                return text + ": expected a descriptor, {\"$fd\": I} with I an integer and no other member; got "
                    + (kind == .object ? "another object" : kind.name)
            case .descriptorOutOfRange(let index, let fds) where fds == 0:
                return text + ": {\"$fd\": \(index)} refers to no descriptor: the message has no \"fds\""
            case .descriptorOutOfRange(let index, let fds):
                return text + ": {\"$fd\": \(index)} is out of range: the message has \"fds\": \(fds), so 0 to \(fds - 1)"
            }
        }
    }
}
