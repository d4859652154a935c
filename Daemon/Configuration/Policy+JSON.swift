import MediatorProtocol

// Reading a policy file's JSON form.
extension Policy {
    /// The members of a policy file, a rule, a match and an allow.
    static let fileMembers = ["rules", "description"]
    static let ruleMembers = ["match", "allow", "description"]
    static let matchMembers = ["user", "group", "uid", "gid", "remote", "host"]
    static let allowMembers = ["register", "call", "subscribe", "publish", "monitor", "send_fds"]

    /// The largest uid or gid a rule may name; 4294967295 is `(uid_t)-1`, no one.
    static let maxID: Int64 = 4_294_967_294

    /// Reads one policy file's JSON. A structural problem (an unknown
    /// member, a wrong type, a pattern that is not one) is thrown and the
    /// whole file is refused: a file whose meaning is in doubt grants
    /// nothing. A rule naming a user or group that does not resolve
    /// through `accounts` is left out, with the problem in ``skippedRules``.
    package init(json: JSONValue, file: String, accounts: any AccountDirectory) throws(PolicyProblem) {
        let reader = Reader(file: file)
        guard let members = json.objectValue else {
            throw PolicyProblem(file: file, reason: "a policy must be a JSON object, got \(json.typeName)")
        }
        try reader.rejectUnknown(members, known: Self.fileMembers, at: nil)
        try reader.description(members, at: nil)
        guard let rulesValue = members["rules"] else { throw reader.problem("rules", "is required") }
        guard let rawRules = rulesValue.arrayValue else { throw reader.expected("rules", "an array of rules", rulesValue) }

        var rules: [Rule] = []
        var skipped: [PolicyProblem] = []
        for (index, raw) in rawRules.enumerated() {
            let path = "rules[\(index)]"
            guard let ruleMembers = raw.objectValue else { throw reader.expected(path, "an object", raw) }
            try reader.rejectUnknown(ruleMembers, known: Self.ruleMembers, at: path)
            try reader.description(ruleMembers, at: path)
            guard let matchValue = ruleMembers["match"] else {
                throw reader.problem(path + ".match", "is required; {} matches everyone")
            }
            guard let allowValue = ruleMembers["allow"] else { throw reader.problem(path + ".allow", "is required") }
            let match = try reader.match(matchValue, at: path + ".match", accounts: accounts)
            let allow = try reader.allow(allowValue, at: path + ".allow")
            switch match {
            case .success(let match): rules.append(Rule(match: match, allow: allow))
            case .failure(let problem): skipped.append(problem)
            }
        }
        self.init(rules: rules, isDefault: false, skippedRules: skipped)
    }

    /// Reads members and builds the problems of one file.
    private struct Reader {
        var file: String

        func problem(_ member: String?, _ reason: String) -> PolicyProblem {
            PolicyProblem(file: file, member: member, reason: reason)
        }

        func expected(_ member: String, _ what: String, _ value: JSONValue) -> PolicyProblem {
            problem(member, "must be \(what), got \(Manifest.shown(value))")
        }

        static func join(_ path: String?, _ member: String) -> String {
            path.map { "\($0).\(member)" } ?? member
        }

        func rejectUnknown(_ members: [String: JSONValue], known: [String], at path: String?) throws(PolicyProblem) {
            let unknown = members.keys.filter { !known.contains($0) }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            if let first = unknown.first {
                throw problem(Self.join(path, first), "unknown member; known members: \(known.joined(separator: ", "))")
            }
        }

        func description(_ members: [String: JSONValue], at path: String?) throws(PolicyProblem) {
            if let value = members["description"], value.stringValue == nil {
                throw expected(Self.join(path, "description"), "a string", value)
            }
        }

        func allow(_ value: JSONValue, at path: String) throws(PolicyProblem) -> Allow {
            guard let members = value.objectValue else { throw expected(path, "an object", value) }
            try rejectUnknown(members, known: Policy.allowMembers, at: path)
            let names = "a name, NAME.* or *"
            let register = try patterns(members, "register", at: path, "a target pattern: expected \(names)") {
                Pattern($0, kind: .target)
            }
            let call = try patterns(
                members, "call", at: path,
                "a call pattern: expected TARGET/ACTION, each side \(names) (such as \"Notes/*\")", CallPattern.init)
            let subscribe = try patterns(members, "subscribe", at: path, "an event pattern: expected \(names)") {
                Pattern($0, kind: .event)
            }
            let publish = try patterns(members, "publish", at: path, "an event pattern: expected \(names)") {
                Pattern($0, kind: .event)
            }
            let sendDescriptors = try patterns(members, "send_fds", at: path, "a target pattern: expected \(names)") {
                Pattern($0, kind: .target)
            }
            var monitor = false
            if let monitorValue = members["monitor"] {
                guard let flag = monitorValue.boolValue else { throw expected(path + ".monitor", "true or false", monitorValue) }
                monitor = flag
            }
            return Allow(
                register: register, call: call, subscribe: subscribe, publish: publish, monitor: monitor,
                sendDescriptors: sendDescriptors)
        }

        /// An array of pattern strings, each read by `parse`; one it
        /// refuses is a problem at its item: "TEXT" is not `what`.
        private func patterns<Parsed>(
            _ members: [String: JSONValue], _ name: String, at path: String, _ what: String,
            _ parse: (String) -> Parsed?
        ) throws(PolicyProblem) -> [Parsed] {
            let member = path + "." + name
            guard let value = members[name] else { return [] }
            guard let items = value.arrayValue else { throw expected(member, "an array of patterns", value) }
            var parsed: [Parsed] = []
            for (index, item) in items.enumerated() {
                let itemPath = "\(member)[\(index)]"
                guard let text = item.stringValue else { throw expected(itemPath, "a string", item) }
                guard let pattern = parse(text) else { throw problem(itemPath, "\(Policy.quoted(text)) is not \(what)") }
                parsed.append(pattern)
            }
            return parsed
        }

        /// The match, or (as a failure, not thrown) why the rule is skipped:
        /// a name that does not resolve, or a user that is not its `uid`.
        func match(_ value: JSONValue, at path: String, accounts: any AccountDirectory) throws(PolicyProblem)
            -> Result<Match, PolicyProblem>
        {
            guard let members = value.objectValue else { throw expected(path, "an object ({} matches everyone)", value) }
            try rejectUnknown(members, known: Policy.matchMembers, at: path)
            let user = try name(members, "user", at: path)
            let group = try name(members, "group", at: path)
            let uid = try id(members, "uid", at: path)
            let gid = try id(members, "gid", at: path)

            var remote = false
            if let value = members["remote"] {
                guard let flag = value.boolValue else { throw expected(path + ".remote", "true or false", value) }
                remote = flag
            }
            var host: String?
            if let value = members["host"] {
                guard let text = value.stringValue, !text.isEmpty, text.utf8.count <= 256 else {
                    throw expected(path + ".host", "a host name", value)
                }
                host = text
            }
            if (remote || host != nil) && (user != nil || group != nil || uid != nil || gid != nil) {
                throw problem(path, "a rule about remote callers cannot match local users or groups: their ids are another host's")
            }
            if host != nil, members["remote"]?.boolValue == false {
                throw problem(path, "\"host\" is about remote callers; \"remote\": false contradicts it")
            }
            var match = Match(uid: uid, gids: gid.map { [$0] } ?? [], remote: remote, host: host)
            if let user {
                guard let resolved = accounts.uid(ofUser: user) else {
                    return .failure(problem(path + ".user", "no user named \(Policy.quoted(user)); the rule is skipped"))
                }
                if let uid, uid != resolved {
                    return .failure(
                        problem(
                            path + ".user",
                            "user \(Policy.quoted(user)) is uid \(resolved), not \(uid) as \"uid\" says; the rule is skipped"))
                }
                match.uid = resolved
            }
            if let group {
                guard let resolved = accounts.gid(ofGroup: group) else {
                    return .failure(problem(path + ".group", "no group named \(Policy.quoted(group)); the rule is skipped"))
                }
                if !match.gids.contains(resolved) { match.gids.append(resolved) }
            }
            return .success(match)
        }

        private func name(_ members: [String: JSONValue], _ name: String, at path: String) throws(PolicyProblem) -> String? {
            guard let value = members[name] else { return nil }
            guard let text = value.stringValue, SystemAccounts.isLookupName(text) else {
                throw expected(path + "." + name, "a non-empty \(name) name", value)
            }
            return text
        }

        private func id(_ members: [String: JSONValue], _ name: String, at path: String) throws(PolicyProblem) -> UInt32? {
            guard let value = members[name] else { return nil }
            guard let number = value.intValue, number >= 0, number <= Policy.maxID else {
                throw expected(path + "." + name, "an integer from 0 to \(Policy.maxID)", value)
            }
            return UInt32(number)
        }
    }
}

/// Why a policy file, or one of its rules, was not loaded.
package typealias PolicyProblem = ConfigFileProblem
