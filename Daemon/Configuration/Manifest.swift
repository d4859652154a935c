import MediatorInterface
import MediatorProtocol

/// One component the daemon knows before it runs (a JSON file in a components folder).
///
/// The daemon starts such a component when a call for its target arrives
/// (or at boot), instead of waiting for the component to connect by itself.
/// See docs/components.md for every member.
package struct Manifest: Sendable, Equatable {
    package enum Launch: Sendable, Equatable {
        /// A program the daemon runs itself; `arguments[0]` is an absolute path.
        case exec(arguments: [String], environment: [String: String], workingDirectory: String?)
        /// A systemd unit to start instead, e.g. "mediator-component@Notes.service".
        case unit(String)
    }

    package enum Start: String, Sendable, CaseIterable { case onDemand = "on-demand", atBoot = "at-boot" }

    package enum RestartPolicy: String, Sendable, CaseIterable { case no, onFailure = "on-failure", always }

    /// The path it was read from.
    package var file: String
    package var target: String
    package var description: String?
    package var actions: [ActionSpec]
    /// The interface file the actions (and maybe the description) came
    /// from, as an absolute or manifest-relative path resolved; nil when the
    /// manifest lists its `actions` itself.
    var interfaceFile: String?
    package var launch: Launch
    /// `.exclusive` (default) or `.pool`.
    package var mode: TargetMode
    /// Default 1; more than 1 only with mode pool; at most ``maxInstances``.
    package var instances: Int
    /// Default `.onDemand`.
    package var start: Start
    /// Default 0; lower starts first (at-boot).
    package var priority: Int
    /// Default 0 = stay running.
    package var idleExitSeconds: Int
    /// Default `.onFailure`.
    package var restart: RestartPolicy
    /// Default 200; doubles per consecutive restart, capped at ``maxRestartBackoffMs``.
    package var restartBackoffMs: Int
    /// Default 5 consecutive restarts, then the component is "failed".
    package var restartLimit: Int
    /// Default 10.
    package var startTimeoutSeconds: Double
    /// Only honoured when the daemon runs as root; only with `exec`.
    package var user: String?
    package var group: String?

    static let maxInstances = 64
    static let defaultRestartBackoffMs = 200
    /// The cap of the doubling backoff, 10 s.
    static let maxRestartBackoffMs = 10_000
    static let defaultRestartLimit = 5
    static let defaultStartTimeoutSeconds = 10.0

    /// The JSON members a manifest may have, in the order they are checked.
    static let knownMembers = [
        "target", "description", "actions", "interface", "exec", "environment", "working_directory", "unit", "mode",
        "instances", "start", "priority", "idle_exit_s", "restart", "restart_backoff_ms", "restart_limit",
        "start_timeout_s", "user", "group",
    ]

    /// A manifest built in code, with the defaults of the JSON form.
    package init(
        file: String = "", target: String, description: String? = nil, actions: [ActionSpec],
        interfaceFile: String? = nil, launch: Launch,
        mode: TargetMode = .exclusive, instances: Int = 1, start: Start = .onDemand, priority: Int = 0,
        idleExitSeconds: Int = 0, restart: RestartPolicy = .onFailure,
        restartBackoffMs: Int = Manifest.defaultRestartBackoffMs, restartLimit: Int = Manifest.defaultRestartLimit,
        startTimeoutSeconds: Double = Manifest.defaultStartTimeoutSeconds, user: String? = nil, group: String? = nil
    ) {
        self.file = file
        self.target = target
        self.description = description
        self.actions = actions
        self.interfaceFile = interfaceFile
        self.launch = launch
        self.mode = mode
        self.instances = instances
        self.start = start
        self.priority = priority
        self.idleExitSeconds = idleExitSeconds
        self.restart = restart
        self.restartBackoffMs = restartBackoffMs
        self.restartLimit = restartLimit
        self.startTimeoutSeconds = startTimeoutSeconds
        self.user = user
        self.group = group
    }

    /// Reads a manifest object; the first problem found is thrown, naming the
    /// member and the reason. Unknown members are a problem, so a typo never
    /// silently leaves a default in place.
    ///
    /// `readFile` gives the bytes of the interface file that an `interface`
    /// member names (the path resolved against the manifest's folder), or
    /// why it cannot; without it such a manifest is a problem.
    package init(
        json: JSONValue, file: String, readFile: ((String) -> Result<[UInt8], InterfaceFileUnreadable>)? = nil
    ) throws(ManifestProblem) {
        guard let members = json.objectValue else {
            throw ManifestProblem(file: file, reason: "a manifest must be a JSON object, got \(json.typeName)")
        }
        let reader = MemberReader(members: members, file: file)

        let unknown = members.keys.filter { !Self.knownMembers.contains($0) }
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        if let first = unknown.first {
            throw reader.problem(first, "unknown member; known members: \(Self.knownMembers.joined(separator: ", "))")
        }

        // target
        guard let targetValue = members["target"] else { throw reader.problem("target", "is required") }
        guard let target = targetValue.stringValue else { throw reader.expected("target", "a string", targetValue) }
        guard NameRules.isValidTarget(target) else {
            throw reader.problem(
                "target",
                "invalid target name \(Self.quoted(target)): expected [A-Za-z][A-Za-z0-9_.-]*, at most \(NameRules.maxNameBytes) bytes"
            )
        }
        guard target != ProtocolConstants.daemonTarget else {
            throw reader.problem("target", "\"mediator\" is the daemon itself and cannot be a component")
        }

        var description = try reader.string("description")

        // actions, or an interface file that has them
        var actions: [ActionSpec] = []
        var interfaceFile: String?
        switch (members["actions"], members["interface"]) {
        case (nil, nil):
            throw reader.problem("actions", "is required, unless \"interface\" names an interface file that has them")
        case (.some, .some):
            throw reader.problem("interface", "\"actions\" and \"interface\" exclude each other; give one of them")
        case (nil, .some(let interfaceValue)):
            guard let path = interfaceValue.stringValue, !path.isEmpty, !path.utf8.contains(0) else {
                throw reader.expected("interface", "the path of an interface file", interfaceValue)
            }
            let resolved = Self.resolve(path, besides: file)
            let interface = try Self.readInterface(resolved, readFile: readFile, reader: reader)
            guard interface.target == target else {
                throw reader.problem(
                    "interface",
                    "\(resolved) is the interface of target \(Self.quoted(interface.target)), not \(Self.quoted(target))")
            }
            actions = interface.actions
            description = description ?? interface.description
            interfaceFile = resolved
        case (.some(let actionsValue), nil):
            guard let rawActions = actionsValue.arrayValue else {
                throw reader.expected("actions", "an array of action names or specs", actionsValue)
            }
            var seen: Set<String> = []
            for (index, raw) in rawActions.enumerated() {
                let spec: ActionSpec
                do {
                    spec = try ActionSpec(json: raw)
                } catch {
                    throw reader.problem("actions", "item \(index): \(error.message)")
                }
                guard seen.insert(spec.name).inserted else {
                    throw reader.problem("actions", "action \(Self.quoted(spec.name)) is declared twice")
                }
                actions.append(spec)
            }
        }

        // exec or unit
        let launch: Launch
        switch (members["exec"], members["unit"]) {
        case (nil, nil):
            throw reader.problem("exec", "a manifest needs either \"exec\" (a command line) or \"unit\" (a systemd unit)")
        case (.some, .some):
            throw reader.problem("unit", "\"exec\" and \"unit\" exclude each other; give one of them")
        case (.some(let execValue), nil):
            guard let items = execValue.arrayValue, !items.isEmpty else {
                throw reader.expected("exec", "a non-empty array of strings", execValue)
            }
            var arguments: [String] = []
            for (index, item) in items.enumerated() {
                guard let argument = item.stringValue else {
                    throw reader.problem("exec", "item \(index) must be a string, got \(Self.shown(item))")
                }
                guard !argument.utf8.contains(0) else {
                    throw reader.problem("exec", "item \(index) contains a NUL byte")
                }
                arguments.append(argument)
            }
            guard arguments[0].hasPrefix("/") else {
                throw reader.problem("exec", "the program must be an absolute path, got \(Self.quoted(arguments[0]))")
            }
            var environment: [String: String] = [:]
            if let environmentValue = members["environment"] {
                guard let variables = environmentValue.objectValue else {
                    throw reader.expected("environment", "an object of strings", environmentValue)
                }
                for name in variables.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                    guard !name.isEmpty, !name.utf8.contains(UInt8(ascii: "=")), !name.utf8.contains(0) else {
                        throw reader.problem("environment", "invalid variable name \(Self.quoted(name))")
                    }
                    guard let value = variables[name]!.stringValue else {
                        throw reader.problem(
                            "environment", "variable \(Self.quoted(name)) must be a string, got \(Self.shown(variables[name]!))")
                    }
                    guard !value.utf8.contains(0) else {
                        throw reader.problem("environment", "variable \(Self.quoted(name)) contains a NUL byte")
                    }
                    environment[name] = value
                }
            }
            let workingDirectory = try reader.string("working_directory")
            if let workingDirectory, !workingDirectory.hasPrefix("/") {
                throw reader.problem("working_directory", "must be an absolute path, got \(Self.quoted(workingDirectory))")
            }
            launch = .exec(arguments: arguments, environment: environment, workingDirectory: workingDirectory)
        case (nil, .some(let unitValue)):
            guard let unit = unitValue.stringValue else { throw reader.expected("unit", "a string", unitValue) }
            guard Self.isValidServiceUnit(unit) else {
                throw reader.problem("unit", "must be a systemd service unit name such as \"name.service\", got \(Self.quoted(unit))")
            }
            for member in ["environment", "working_directory", "user", "group"] where members[member] != nil {
                throw reader.problem(member, "applies only to \"exec\"; with \"unit\", set it in the unit file")
            }
            launch = .unit(unit)
        }

        // mode, instances
        let mode = try reader.choice("mode", TargetMode.self, TargetMode.allCases.map(\.rawValue)) ?? .exclusive
        var instances = 1
        if let value = members["instances"] {
            guard let number = value.intValue, number > 0 else {
                throw reader.expected("instances", "a positive integer", value)
            }
            guard number <= Self.maxInstances else {
                throw reader.problem("instances", "must be at most \(Self.maxInstances), got \(number)")
            }
            guard number == 1 || mode == .pool else {
                throw reader.problem("instances", "more than 1 instance needs \"mode\": \"pool\", got \(number)")
            }
            instances = Int(number)
        }

        let start = try reader.choice("start", Start.self, Start.allCases.map(\.rawValue)) ?? .onDemand
        let priority = try reader.integer("priority", minimum: nil) ?? 0
        let idleExitSeconds = try reader.integer("idle_exit_s", minimum: 0) ?? 0
        let restart = try reader.choice("restart", RestartPolicy.self, RestartPolicy.allCases.map(\.rawValue)) ?? .onFailure
        let restartBackoffMs = try reader.integer("restart_backoff_ms", minimum: 0) ?? Self.defaultRestartBackoffMs
        let restartLimit = try reader.integer("restart_limit", minimum: 0) ?? Self.defaultRestartLimit

        var startTimeoutSeconds = Self.defaultStartTimeoutSeconds
        if let value = members["start_timeout_s"] {
            guard let number = value.doubleValue, number > 0, number.isFinite else {
                throw reader.expected("start_timeout_s", "a positive number", value)
            }
            startTimeoutSeconds = number
        }

        let user = try reader.string("user", nonEmpty: true)
        let group = try reader.string("group", nonEmpty: true)

        self.init(
            file: file, target: target, description: description, actions: actions, interfaceFile: interfaceFile,
            launch: launch, mode: mode,
            instances: instances, start: start, priority: priority, idleExitSeconds: idleExitSeconds, restart: restart,
            restartBackoffMs: restartBackoffMs, restartLimit: restartLimit, startTimeoutSeconds: startTimeoutSeconds,
            user: user, group: group)
    }

    // MARK: - Helpers

    /// `path` as it is when absolute, else relative to the folder of `manifestFile`.
    static func resolve(_ path: String, besides manifestFile: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        guard let slash = manifestFile.lastIndex(of: "/") else { return path }
        return String(manifestFile[...slash]) + path
    }

    /// The interface file, checked as `mediatorctl interface check` does; its
    /// first problem (and how many more) is the manifest's problem.
    private static func readInterface(
        _ path: String, readFile: ((String) -> Result<[UInt8], InterfaceFileUnreadable>)?, reader: MemberReader
    ) throws(ManifestProblem) -> InterfaceFile {
        guard let readFile else { throw reader.problem("interface", "\(path): interface files are not read here") }
        switch readFile(path) {
        case .failure(let unreadable):
            throw reader.problem("interface", "\(path): \(unreadable.reason)")
        case .success(let bytes):
            do {
                return try InterfaceFile(bytes: bytes, file: path)
            } catch {
                let first = error.problems.first?.description ?? path
                let more = error.problems.count - 1
                throw reader.problem(
                    "interface",
                    more > 0 ? "\(first) (and \(more) more: mediatorctl interface check \(path))" : first)
            }
        }
    }

    /// `name.service` or `name@instance.service`, with systemd's unit name bytes.
    static func isValidServiceUnit(_ unit: String) -> Bool {
        let suffix = ".service"
        guard unit.hasSuffix(suffix), unit.utf8.count > suffix.utf8.count, unit.utf8.count <= 255 else { return false }
        return unit.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || ":-_.\\@".utf8.contains(byte)
        }
    }

    static func quoted(_ text: String) -> String { JSONValue.string(text).jsonText }

    /// A value as JSON text for a problem's reason, cut short when long.
    static func shown(_ value: JSONValue) -> String {
        let text = value.jsonText
        guard text.count > 60 else { return text }
        return String(text.prefix(57)) + "..."
    }

    /// Reads typed members of one manifest and builds the problems.
    private struct MemberReader {
        var members: [String: JSONValue]
        var file: String

        func problem(_ member: String, _ reason: String) -> ManifestProblem {
            ManifestProblem(file: file, member: member, reason: reason)
        }

        func expected(_ member: String, _ what: String, _ value: JSONValue) -> ManifestProblem {
            problem(member, "must be \(what), got \(Manifest.shown(value))")
        }

        func string(_ member: String, nonEmpty: Bool = false) throws(ManifestProblem) -> String? {
            guard let value = members[member] else { return nil }
            guard let text = value.stringValue, !(nonEmpty && text.isEmpty) else {
                throw expected(member, nonEmpty ? "a non-empty string" : "a string", value)
            }
            return text
        }

        func integer(_ member: String, minimum: Int64?) throws(ManifestProblem) -> Int? {
            guard let value = members[member] else { return nil }
            guard let number = value.intValue else { throw expected(member, "an integer", value) }
            if let minimum, number < minimum {
                throw expected(member, minimum == 0 ? "an integer >= 0" : "an integer >= \(minimum)", value)
            }
            return Int(number)
        }

        func choice<Choice: RawRepresentable>(_ member: String, _ type: Choice.Type, _ allowed: [String])
            throws(ManifestProblem) -> Choice? where Choice.RawValue == String
        {
            guard let value = members[member] else { return nil }
            guard let text = value.stringValue, let choice = Choice(rawValue: text) else {
                throw expected(member, "one of " + allowed.map(Manifest.quoted).joined(separator: ", "), value)
            }
            return choice
        }
    }
}

/// Why a manifest file was not loaded.
package typealias ManifestProblem = ConfigFileProblem

/// Why the interface file a manifest names could not be read (`cannot be
/// read: No such file or directory`).
package struct InterfaceFileUnreadable: Error, Sendable, Equatable {
    package var reason: String

    package init(reason: String) {
        self.reason = reason
    }
}
