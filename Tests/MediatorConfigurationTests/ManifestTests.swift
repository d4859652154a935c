import Foundation
import MediatorProtocol
import Testing

@testable import MediatorConfiguration

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Reading one manifest

struct ValidManifestCase: Sendable, CustomTestStringConvertible {
    var name: String
    var json: String
    var expected: Manifest
    var testDescription: String { name }
}

struct BadManifestCase: Sendable, CustomTestStringConvertible {
    var json: String
    var member: String?
    var reason: String
    var testDescription: String { json }
}

private let file = "/etc/mediator/components.d/test.json"

private let validCases: [ValidManifestCase] = [
    ValidManifestCase(
        name: "minimal exec: every default",
        json: #"{"target": "Notes", "actions": ["open"], "exec": ["/usr/bin/notes"]}"#,
        expected: Manifest(
            file: file, target: "Notes", description: nil, actions: [ActionSpec(name: "open")],
            launch: .exec(arguments: ["/usr/bin/notes"], environment: [:], workingDirectory: nil),
            mode: .exclusive, instances: 1, start: .onDemand, priority: 0, idleExitSeconds: 0, restart: .onFailure,
            restartBackoffMs: 200, restartLimit: 5, startTimeoutSeconds: 10, user: nil, group: nil)),
    ValidManifestCase(
        name: "every exec member",
        json: #"""
            {"target": "Notes", "description": "Takes notes", "actions": ["open", {"name": "add", "description": "Adds", "url": false}],
             "exec": ["/usr/bin/notes", "--serve", ""], "environment": {"LANG": "C.UTF-8", "EMPTY": ""},
             "working_directory": "/var/lib/notes", "mode": "exclusive", "instances": 1, "start": "on-demand",
             "priority": -3, "idle_exit_s": 300, "restart": "always", "restart_backoff_ms": 0, "restart_limit": 0,
             "start_timeout_s": 2.5, "user": "notes", "group": "staff"}
            """#,
        expected: Manifest(
            file: file, target: "Notes", description: "Takes notes",
            actions: [ActionSpec(name: "open"), ActionSpec(name: "add", description: "Adds", url: false)],
            launch: .exec(
                arguments: ["/usr/bin/notes", "--serve", ""], environment: ["LANG": "C.UTF-8", "EMPTY": ""],
                workingDirectory: "/var/lib/notes"),
            mode: .exclusive, instances: 1, start: .onDemand, priority: -3, idleExitSeconds: 300, restart: .always,
            restartBackoffMs: 0, restartLimit: 0, startTimeoutSeconds: 2.5, user: "notes", group: "staff")),
    ValidManifestCase(
        name: "unit, no actions",
        json: #"{"target": "Notes", "actions": [], "unit": "mediator-component@Notes.service"}"#,
        expected: Manifest(file: file, target: "Notes", actions: [], launch: .unit("mediator-component@Notes.service"))),
    ValidManifestCase(
        name: "pool of 4, integral number accepted",
        json: #"{"target": "Thumbs", "actions": ["make"], "exec": ["/opt/t"], "mode": "pool", "instances": 4.0, "restart": "no"}"#,
        expected: Manifest(
            file: file, target: "Thumbs", actions: [ActionSpec(name: "make")],
            launch: .exec(arguments: ["/opt/t"], environment: [:], workingDirectory: nil), mode: .pool, instances: 4,
            restart: .no)),
    ValidManifestCase(
        name: "pool of 64",
        json: #"{"target": "P", "actions": ["a"], "exec": ["/p"], "mode": "pool", "instances": 64}"#,
        expected: Manifest(
            file: file, target: "P", actions: [ActionSpec(name: "a")],
            launch: .exec(arguments: ["/p"], environment: [:], workingDirectory: nil), mode: .pool, instances: 64)),
    ValidManifestCase(
        name: "at-boot with priority",
        json: #"{"target": "Clock", "actions": ["now"], "exec": ["/usr/libexec/clock"], "start": "at-boot", "priority": 10, "start_timeout_s": 1}"#,
        expected: Manifest(
            file: file, target: "Clock", actions: [ActionSpec(name: "now")],
            launch: .exec(arguments: ["/usr/libexec/clock"], environment: [:], workingDirectory: nil), start: .atBoot,
            priority: 10, startTimeoutSeconds: 1)),
    ValidManifestCase(
        name: "dots, dashes and underscores in names",
        json: #"{"target": "a.b-c_d", "actions": ["_private"], "unit": "x.service"}"#,
        expected: Manifest(file: file, target: "a.b-c_d", actions: [ActionSpec(name: "_private")], launch: .unit("x.service"))),
]

private let known = Manifest.knownMembers.joined(separator: ", ")
private let base = #""target": "A", "actions": ["a"], "exec": ["/bin/a"]"#
private let unitBase = #""target": "A", "actions": ["a"], "unit": "a.service""#

private let badCases: [BadManifestCase] = [
    // The file as a whole
    BadManifestCase(json: #"["target"]"#, member: nil, reason: "a manifest must be a JSON object, got array"),
    BadManifestCase(json: #""Notes""#, member: nil, reason: "a manifest must be a JSON object, got string"),
    // Unknown members, reported in byte order before anything else
    BadManifestCase(json: #"{\#(base), "restart_limt": 3}"#, member: "restart_limt", reason: "unknown member; known members: \(known)"),
    BadManifestCase(json: #"{"Target": "A", "zz": 1}"#, member: "Target", reason: "unknown member; known members: \(known)"),
    // target
    BadManifestCase(json: #"{"actions": [], "exec": ["/a"]}"#, member: "target", reason: "is required"),
    BadManifestCase(json: #"{"target": 5, "actions": [], "exec": ["/a"]}"#, member: "target", reason: "must be a string, got 5"),
    BadManifestCase(
        json: #"{"target": "9lives", "actions": [], "exec": ["/a"]}"#, member: "target",
        reason: #"invalid target name "9lives": expected [A-Za-z][A-Za-z0-9_.-]*, at most 128 bytes"#),
    BadManifestCase(
        json: #"{"target": "\#(String(repeating: "a", count: 129))", "actions": [], "exec": ["/a"]}"#, member: "target",
        reason: #"invalid target name "\#(String(repeating: "a", count: 129))": expected [A-Za-z][A-Za-z0-9_.-]*, at most 128 bytes"#),
    BadManifestCase(
        json: #"{"target": "mediator", "actions": [], "exec": ["/a"]}"#, member: "target",
        reason: #""mediator" is the daemon itself and cannot be a component"#),
    // description
    BadManifestCase(json: #"{\#(base), "description": 3}"#, member: "description", reason: "must be a string, got 3"),
    BadManifestCase(json: #"{\#(base), "description": null}"#, member: "description", reason: "must be a string, got null"),
    // actions
    BadManifestCase(
        json: #"{"target": "A", "exec": ["/a"]}"#, member: "actions",
        reason: #"is required, unless "interface" names an interface file that has them"#),
    BadManifestCase(
        json: #"{"target": "A", "actions": "open", "exec": ["/a"]}"#, member: "actions",
        reason: #"must be an array of action names or specs, got "open""#),
    BadManifestCase(
        json: #"{"target": "A", "actions": ["bad name"], "exec": ["/a"]}"#, member: "actions",
        reason: #"item 0: invalid action name "bad name": expected [A-Za-z_][A-Za-z0-9_.-]*, at most 128 bytes"#),
    BadManifestCase(
        json: #"{"target": "A", "actions": ["a", 1], "exec": ["/a"]}"#, member: "actions",
        reason: "item 1: an action spec must be an action name or an object, got integer"),
    BadManifestCase(
        json: #"{"target": "A", "actions": [{"name": "a", "params": {"type": "bogus"}}], "exec": ["/a"]}"#, member: "actions",
        reason: "item 0: " + actionSpecError(#"{"name": "a", "params": {"type": "bogus"}}"#)),
    BadManifestCase(
        json: #"{"target": "A", "actions": ["a", {"name": "a", "description": "again"}], "exec": ["/a"]}"#,
        member: "actions", reason: #"action "a" is declared twice"#),
    // exec / unit
    BadManifestCase(
        json: #"{"target": "A", "actions": []}"#, member: "exec",
        reason: #"a manifest needs either "exec" (a command line) or "unit" (a systemd unit)"#),
    BadManifestCase(
        json: #"{\#(base), "unit": "a.service"}"#, member: "unit", reason: #""exec" and "unit" exclude each other; give one of them"#),
    BadManifestCase(json: #"{"target": "A", "actions": [], "exec": []}"#, member: "exec", reason: "must be a non-empty array of strings, got []"),
    BadManifestCase(
        json: #"{"target": "A", "actions": [], "exec": "/bin/a --x"}"#, member: "exec",
        reason: #"must be a non-empty array of strings, got "/bin/a --x""#),
    BadManifestCase(
        json: #"{"target": "A", "actions": [], "exec": ["notes"]}"#, member: "exec",
        reason: #"the program must be an absolute path, got "notes""#),
    BadManifestCase(json: #"{"target": "A", "actions": [], "exec": ["/a", 3]}"#, member: "exec", reason: "item 1 must be a string, got 3"),
    BadManifestCase(json: #"{"target": "A", "actions": [], "exec": ["/a", "x\u0000"]}"#, member: "exec", reason: "item 1 contains a NUL byte"),
    BadManifestCase(json: #"{\#(base), "environment": ["A=1"]}"#, member: "environment", reason: #"must be an object of strings, got ["A=1"]"#),
    BadManifestCase(
        json: #"{\#(base), "environment": {"A": "x", "B": 1}}"#, member: "environment", reason: #"variable "B" must be a string, got 1"#),
    BadManifestCase(json: #"{\#(base), "environment": {"A=B": "x"}}"#, member: "environment", reason: #"invalid variable name "A=B""#),
    BadManifestCase(json: #"{\#(base), "environment": {"": "x"}}"#, member: "environment", reason: #"invalid variable name """#),
    BadManifestCase(
        json: #"{\#(base), "working_directory": "var/lib"}"#, member: "working_directory",
        reason: #"must be an absolute path, got "var/lib""#),
    BadManifestCase(json: #"{\#(base), "working_directory": 1}"#, member: "working_directory", reason: "must be a string, got 1"),
    BadManifestCase(json: #"{"target": "A", "actions": [], "unit": 1}"#, member: "unit", reason: "must be a string, got 1"),
    BadManifestCase(
        json: #"{"target": "A", "actions": [], "unit": "notes"}"#, member: "unit",
        reason: #"must be a systemd service unit name such as "name.service", got "notes""#),
    BadManifestCase(
        json: #"{"target": "A", "actions": [], "unit": "notes.socket"}"#, member: "unit",
        reason: #"must be a systemd service unit name such as "name.service", got "notes.socket""#),
    BadManifestCase(
        json: #"{"target": "A", "actions": [], "unit": ".service"}"#, member: "unit",
        reason: #"must be a systemd service unit name such as "name.service", got ".service""#),
    BadManifestCase(
        json: #"{"target": "A", "actions": [], "unit": "my notes.service"}"#, member: "unit",
        reason: #"must be a systemd service unit name such as "name.service", got "my notes.service""#),
    BadManifestCase(
        json: #"{\#(unitBase), "environment": {}}"#, member: "environment",
        reason: #"applies only to "exec"; with "unit", set it in the unit file"#),
    BadManifestCase(
        json: #"{\#(unitBase), "user": "notes"}"#, member: "user", reason: #"applies only to "exec"; with "unit", set it in the unit file"#),
    // mode, instances
    BadManifestCase(json: #"{\#(base), "mode": "shared"}"#, member: "mode", reason: #"must be one of "exclusive", "pool", got "shared""#),
    BadManifestCase(json: #"{\#(base), "mode": "pool", "instances": "three"}"#, member: "instances", reason: #"must be a positive integer, got "three""#),
    BadManifestCase(json: #"{\#(base), "mode": "pool", "instances": 0}"#, member: "instances", reason: "must be a positive integer, got 0"),
    BadManifestCase(json: #"{\#(base), "mode": "pool", "instances": -2}"#, member: "instances", reason: "must be a positive integer, got -2"),
    BadManifestCase(json: #"{\#(base), "mode": "pool", "instances": 1.5}"#, member: "instances", reason: "must be a positive integer, got 1.5"),
    BadManifestCase(json: #"{\#(base), "mode": "pool", "instances": 65}"#, member: "instances", reason: "must be at most 64, got 65"),
    BadManifestCase(json: #"{\#(base), "instances": 2}"#, member: "instances", reason: #"more than 1 instance needs "mode": "pool", got 2"#),
    BadManifestCase(
        json: #"{\#(base), "mode": "exclusive", "instances": 3}"#, member: "instances", reason: #"more than 1 instance needs "mode": "pool", got 3"#),
    BadManifestCase(
        json: #"{\#(base), "instances": "\#(String(repeating: "x", count: 100))"}"#, member: "instances",
        reason: #"must be a positive integer, got "\#(String(repeating: "x", count: 56))..."#),
    // The rest
    BadManifestCase(json: #"{\#(base), "start": "boot"}"#, member: "start", reason: #"must be one of "on-demand", "at-boot", got "boot""#),
    BadManifestCase(json: #"{\#(base), "priority": "high"}"#, member: "priority", reason: #"must be an integer, got "high""#),
    BadManifestCase(json: #"{\#(base), "priority": 0.5}"#, member: "priority", reason: "must be an integer, got 0.5"),
    BadManifestCase(json: #"{\#(base), "idle_exit_s": -1}"#, member: "idle_exit_s", reason: "must be an integer >= 0, got -1"),
    BadManifestCase(json: #"{\#(base), "idle_exit_s": true}"#, member: "idle_exit_s", reason: "must be an integer, got true"),
    BadManifestCase(
        json: #"{\#(base), "restart": "never"}"#, member: "restart", reason: #"must be one of "no", "on-failure", "always", got "never""#),
    BadManifestCase(json: #"{\#(base), "restart": false}"#, member: "restart", reason: #"must be one of "no", "on-failure", "always", got false"#),
    BadManifestCase(json: #"{\#(base), "restart_backoff_ms": -5}"#, member: "restart_backoff_ms", reason: "must be an integer >= 0, got -5"),
    BadManifestCase(json: #"{\#(base), "restart_backoff_ms": 1.5}"#, member: "restart_backoff_ms", reason: "must be an integer, got 1.5"),
    BadManifestCase(json: #"{\#(base), "restart_limit": -1}"#, member: "restart_limit", reason: "must be an integer >= 0, got -1"),
    BadManifestCase(json: #"{\#(base), "start_timeout_s": 0}"#, member: "start_timeout_s", reason: "must be a positive number, got 0"),
    BadManifestCase(json: #"{\#(base), "start_timeout_s": -1.5}"#, member: "start_timeout_s", reason: "must be a positive number, got -1.5"),
    BadManifestCase(json: #"{\#(base), "start_timeout_s": "10"}"#, member: "start_timeout_s", reason: #"must be a positive number, got "10""#),
    BadManifestCase(json: #"{\#(base), "user": ""}"#, member: "user", reason: #"must be a non-empty string, got """#),
    BadManifestCase(json: #"{\#(base), "group": 100}"#, member: "group", reason: "must be a non-empty string, got 100"),
]

/// The message `ActionSpec(json:)` gives for a bad spec, so the test does not
/// restate the schema checker's wording.
private func actionSpecError(_ spec: String) -> String {
    do {
        _ = try ActionSpec(json: try JSONParser.parse(spec))
        return "(no error)"
    } catch let error as MediatorError {
        return error.message
    } catch {
        return "\(error)"
    }
}

@Suite("Manifest")
struct ManifestTests {
    @Test(arguments: validCases)
    func validManifest(_ testCase: ValidManifestCase) throws {
        let manifest = try Manifest(json: JSONParser.parse(testCase.json), file: file)
        #expect(manifest == testCase.expected)
    }

    @Test(arguments: badCases)
    func badManifest(_ testCase: BadManifestCase) throws {
        let json = try JSONParser.parse(testCase.json)
        #expect(throws: ManifestProblem(file: file, member: testCase.member, reason: testCase.reason)) {
            try Manifest(json: json, file: file)
        }
    }

    @Test func maximumTargetLength() throws {
        let name = String(repeating: "a", count: 128)
        let manifest = try Manifest(json: ["target": .string(name), "actions": [], "unit": "a.service"], file: file)
        #expect(manifest.target == name)
    }

    @Test func problemDescription() {
        #expect(
            ManifestProblem(file: "/x/a.json", member: "instances", reason: #"must be a positive integer, got "three""#).description
                == #"/x/a.json: member "instances": must be a positive integer, got "three""#)
        #expect(ManifestProblem(file: "/x/a.json", reason: "is not valid JSON").description == "/x/a.json: is not valid JSON")
    }

    @Test func defaultsOfTheCodeInitMatchTheJSON() throws {
        let fromJSON = try Manifest(json: JSONParser.parse(#"{"target": "A", "actions": [], "unit": "a.service"}"#), file: "f")
        #expect(fromJSON == Manifest(file: "f", target: "A", actions: [], launch: .unit("a.service")))
    }
}

// MARK: - Actions from an interface file

/// Interface files the tests hand to `Manifest(json:file:readFile:)`, by resolved path.
private let interfaceFiles: [String: String] = [
    "/etc/mediator/components.d/notes.mediator.json": #"""
        {"target": "Notes", "description": "From the interface",
         "actions": [{"name": "add", "params": {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}}, "list"]}
        """#,
    "/usr/share/mediator/Notes.mediator.json": #"{"target": "Notes", "actions": ["get"]}"#,
    "/etc/mediator/components.d/bad.mediator.json": #"{"target": "Notes", "actions": [{"name": "a", "more": true, "oneway": true}], "extra": 1}"#,
    "/etc/mediator/components.d/one-problem.mediator.json": #"{"target": "Notes", "actions": [5]}"#,
]

private func readInterface(_ path: String) -> Result<[UInt8], InterfaceFileUnreadable> {
    guard let text = interfaceFiles[path] else { return .failure(InterfaceFileUnreadable(reason: "does not exist")) }
    return .success(Array(text.utf8))
}

private func manifest(_ members: String) throws -> Manifest {
    try Manifest(json: JSONParser.parse(#"{"target": "Notes", "exec": ["/bin/notes"]\#(members)}"#), file: file, readFile: readInterface)
}

@Suite("Manifest: interface")
struct ManifestInterfaceTests {
    @Test func actionsAndDescriptionComeFromAFileBesideTheManifest() throws {
        let notes = try manifest(#", "interface": "notes.mediator.json""#)
        #expect(notes.actions.map(\.name) == ["add", "list"])
        #expect(notes.actions.first?.params?.required == ["text"])
        #expect(notes.description == "From the interface")
        #expect(notes.interfaceFile == "/etc/mediator/components.d/notes.mediator.json")
    }

    @Test func theManifestsDescriptionWinsAndAbsolutePathsAreKept() throws {
        let notes = try manifest(#", "interface": "/usr/share/mediator/Notes.mediator.json", "description": "Mine""#)
        #expect(notes.actions == [ActionSpec(name: "get")])
        #expect(notes.description == "Mine")
        #expect(notes.interfaceFile == "/usr/share/mediator/Notes.mediator.json")
    }

    @Test(arguments: [
        (#", "interface": "notes.mediator.json", "actions": []"#,
         #""actions" and "interface" exclude each other; give one of them"#),
        (#", "interface": 5"#, "must be the path of an interface file, got 5"),
        (#", "interface": """#, #"must be the path of an interface file, got """#),
        (#", "interface": "gone.mediator.json""#, "/etc/mediator/components.d/gone.mediator.json: does not exist"),
        (#", "interface": "one-problem.mediator.json""#,
         "/etc/mediator/components.d/one-problem.mediator.json: actions[0]: an action spec must be an action name or an object, got integer"),
        (#", "interface": "bad.mediator.json""#,
         "/etc/mediator/components.d/bad.mediator.json: extra: unknown member; known members: target, description, actions (and mode, state, calls_served, instances, activation, uptime_s, which describe adds) (and 1 more: mediatorctl interface check /etc/mediator/components.d/bad.mediator.json)"),
    ])
    func problemsNameTheManifestAndTheMemberInterface(_ members: String, _ reason: String) throws {
        #expect(throws: ManifestProblem(file: file, member: "interface", reason: reason)) { try manifest(members) }
    }

    @Test func theInterfaceMustBeTheManifestsTarget() throws {
        #expect(
            throws: ManifestProblem(
                file: file, member: "interface",
                reason: #"/usr/share/mediator/Notes.mediator.json is the interface of target "Notes", not "Other""#)
        ) {
            try Manifest(
                json: JSONParser.parse(#"{"target": "Other", "exec": ["/a"], "interface": "/usr/share/mediator/Notes.mediator.json"}"#),
                file: file, readFile: readInterface)
        }
    }

    @Test func withoutAReaderAnInterfaceIsAProblem() throws {
        let json = try JSONParser.parse(#"{"target": "Notes", "exec": ["/a"], "interface": "/x.json"}"#)
        #expect(throws: ManifestProblem(file: file, member: "interface", reason: "/x.json: interface files are not read here")) {
            try Manifest(json: json, file: file)
        }
    }

    @Test func theLoaderReadsTheFileRelativeToTheManifestsFolder() throws {
        let temp = ManifestScratchFolder()
        let dir = temp.folder("components.d")
        let shared = temp.folder("interfaces")
        ManifestScratchFolder.write(#"{"target": "Notes", "actions": ["add"]}"#, to: shared + "/Notes.mediator.json")
        ManifestScratchFolder.write(
            #"{"target": "Notes", "exec": ["/bin/true"], "interface": "../interfaces/Notes.mediator.json"}"#, to: dir + "/notes.json")
        ManifestScratchFolder.write(
            #"{"target": "Gone", "exec": ["/bin/true"], "interface": "Gone.mediator.json"}"#, to: dir + "/gone.json")
        ManifestScratchFolder.write(
            #"{"target": "Dir", "exec": ["/bin/true"], "interface": "\#(shared)"}"#, to: dir + "/dir.json")
        let (manifests, skipped) = ManifestLoader(directories: [dir]).load()
        let problems = skipped.map(\.problem)
        #expect(manifests.map(\.target) == ["Notes"])
        #expect(manifests.first?.actions == [ActionSpec(name: "add")])
        #expect(manifests.first?.interfaceFile == dir + "/../interfaces/Notes.mediator.json")
        #expect(problems == [
            ManifestProblem(file: dir + "/dir.json", member: "interface", reason: "\(shared): is not a regular file"),
            ManifestProblem(file: dir + "/gone.json", member: "interface", reason: "\(dir)/Gone.mediator.json: does not exist"),
        ])
    }
}

// MARK: - Loading folders

/// A folder under /tmp, removed when the value goes away.
final class ManifestScratchFolder {
    let path: String

    init() {
        var template = Array("/tmp/mediator-manifests.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!).map { String(cString: $0) } }
        guard let made else { preconditionFailure("mkdtemp failed") }
        path = made
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Makes a subfolder and returns its path.
    func folder(_ name: String) -> String {
        let sub = path + "/" + name
        try! FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true)
        return sub
    }

    @discardableResult
    static func write(_ text: String, to path: String) -> String {
        precondition(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
        return path
    }
}

private func exec(_ target: String, _ program: String = "/bin/true") -> String {
    #"{"target": "\#(target)", "actions": ["a"], "exec": ["\#(program)"]}"#
}

@Suite("ManifestLoader")
struct ManifestLoaderTests {
    @Test func goodFilesLoadBesideBadOnes() throws {
        let temp = ManifestScratchFolder()
        let dir = temp.folder("components.d")
        ManifestScratchFolder.write(exec("Alpha"), to: dir + "/alpha.json")
        ManifestScratchFolder.write(#"{"target": "Notes",}"#, to: dir + "/broken.json")
        ManifestScratchFolder.write(#"{"target": "C", "actions": [], "exec": ["/c"], "instances": "three"}"#, to: dir + "/c.json")
        ManifestScratchFolder.write("[1, 2]", to: dir + "/d.json")
        ManifestScratchFolder.write(exec("Echo"), to: dir + "/echo.json")
        ManifestScratchFolder.write("not json at all", to: dir + "/README.txt")
        ManifestScratchFolder.write("not json at all", to: dir + "/echo.json.bak")
        ManifestScratchFolder.write("not json at all", to: dir + "/.hidden.json")
        _ = temp.folder("components.d/folder.json")

        let (manifests, skipped) = ManifestLoader(directories: [dir]).load()
        let problems = skipped.map(\.problem)
        #expect(manifests.map(\.target) == ["Alpha", "Echo"])
        #expect(manifests.map(\.file) == [dir + "/alpha.json", dir + "/echo.json"])
        #expect(problems.count == 3)
        guard problems.count == 3 else { return }
        #expect(problems[0] == ManifestProblem(file: dir + "/broken.json", reason: "is not valid JSON: expected a member name at byte 19"))
        #expect(problems[1] == ManifestProblem(file: dir + "/c.json", member: "instances", reason: #"must be a positive integer, got "three""#))
        #expect(problems[2] == ManifestProblem(file: dir + "/d.json", reason: "a manifest must be a JSON object, got array"))
    }

    @Test func filesAreReadInByteOrder() {
        let temp = ManifestScratchFolder()
        let dir = temp.folder("d")
        for (name, target) in [("zeta", "Z"), ("alpha", "A"), ("Beta", "B"), ("10-first", "F")] {
            ManifestScratchFolder.write(exec(target), to: "\(dir)/\(name).json")
        }
        let (manifests, skipped) = ManifestLoader(directories: [dir + "/"]).load()
        let problems = skipped.map(\.problem)
        #expect(problems.isEmpty)
        #expect(manifests.map(\.target) == ["F", "B", "A", "Z"])
        #expect(manifests.first?.file == dir + "/10-first.json")
    }

    @Test func theFirstFolderWinsByFileName() throws {
        let temp = ManifestScratchFolder()
        let etc = temp.folder("etc")
        let lib = temp.folder("lib")
        ManifestScratchFolder.write(exec("Notes", "/usr/local/bin/notes"), to: etc + "/notes.json")
        ManifestScratchFolder.write(exec("Notes", "/usr/bin/notes"), to: lib + "/notes.json")
        // Shadowed files are not even read, so a bad one is not a problem.
        ManifestScratchFolder.write("{ broken", to: etc + "/clock.json")
        ManifestScratchFolder.write(exec("Clock"), to: lib + "/clock.json")
        ManifestScratchFolder.write(exec("Tasks"), to: lib + "/tasks.json")
        ManifestScratchFolder.write(exec("Hidden"), to: lib + "/shadowed-by-bad.json")
        ManifestScratchFolder.write(#"{"target": "X"}"#, to: etc + "/shadowed-by-bad.json")

        let (manifests, skipped) = ManifestLoader(directories: [etc, lib]).load()
        let problems = skipped.map(\.problem)
        #expect(manifests.map(\.target) == ["Notes", "Tasks"])
        #expect(manifests.first?.launch == .exec(arguments: ["/usr/local/bin/notes"], environment: [:], workingDirectory: nil))
        #expect(manifests.first?.file == etc + "/notes.json")
        #expect(problems.map(\.file) == [etc + "/clock.json", etc + "/shadowed-by-bad.json"])
        #expect(problems.last?.member == "actions")
    }

    @Test func emptyFilesAndLinksToDevNullMask() throws {
        let temp = ManifestScratchFolder()
        let etc = temp.folder("etc")
        let lib = temp.folder("lib")
        ManifestScratchFolder.write("", to: etc + "/notes.json")
        try FileManager.default.createSymbolicLink(atPath: etc + "/clock.json", withDestinationPath: "/dev/null")
        try FileManager.default.createSymbolicLink(atPath: etc + "/gone.json", withDestinationPath: etc + "/missing")
        ManifestScratchFolder.write(exec("Notes"), to: lib + "/notes.json")
        ManifestScratchFolder.write(exec("Clock"), to: lib + "/clock.json")
        ManifestScratchFolder.write(exec("Tasks"), to: lib + "/tasks.json")
        // A link to a good file is read like the file.
        try FileManager.default.createSymbolicLink(atPath: etc + "/linked.json", withDestinationPath: lib + "/tasks.json")

        let (manifests, skipped) = ManifestLoader(directories: [etc, lib]).load()
        let problems = skipped.map(\.problem)
        #expect(manifests.map(\.target) == ["Tasks"])
        #expect(manifests.map(\.file) == [etc + "/linked.json"])
        #expect(problems.count == 2)
        #expect(problems.first == ManifestProblem(file: etc + "/gone.json", reason: "is a link to a file that does not exist"))
        #expect(
            problems.last
                == ManifestProblem(
                    file: lib + "/tasks.json", member: "target", reason: #"target "Tasks" is already declared by \#(etc)/linked.json"#))
    }

    @Test func aSecondFileForTheSameTargetIsAProblem() {
        let temp = ManifestScratchFolder()
        let etc = temp.folder("etc")
        let lib = temp.folder("lib")
        ManifestScratchFolder.write(exec("Notes"), to: etc + "/a.json")
        ManifestScratchFolder.write(exec("Notes", "/other"), to: etc + "/b.json")
        ManifestScratchFolder.write(exec("Notes", "/third"), to: lib + "/c.json")
        ManifestScratchFolder.write(exec("Other"), to: lib + "/d.json")

        let (manifests, skipped) = ManifestLoader(directories: [etc, lib]).load()
        let problems = skipped.map(\.problem)
        #expect(manifests.map(\.file) == [etc + "/a.json", lib + "/d.json"])
        let reason = #"target "Notes" is already declared by \#(etc)/a.json"#
        #expect(
            problems == [
                ManifestProblem(file: etc + "/b.json", member: "target", reason: reason),
                ManifestProblem(file: lib + "/c.json", member: "target", reason: reason),
            ])
    }

    @Test func missingFoldersAreNotProblems() {
        let temp = ManifestScratchFolder()
        let lib = temp.folder("lib")
        ManifestScratchFolder.write(exec("Notes"), to: lib + "/notes.json")
        let (manifests, skipped) = ManifestLoader(directories: [temp.path + "/etc", lib, temp.path + "/nope/deeper"]).load()
        let problems = skipped.map(\.problem)
        #expect(manifests.map(\.target) == ["Notes"])
        #expect(problems.isEmpty)

        let (none, noProblems) = ManifestLoader(directories: [temp.path + "/etc"]).load()
        #expect(none.isEmpty && noProblems.isEmpty)
        let (empty, stillNoProblems) = ManifestLoader(directories: []).load()
        #expect(empty.isEmpty && stillNoProblems.isEmpty)
    }

    @Test func aSkippedFileKeepsTheTargetItDeclaresWhenThatCanBeRead() {
        let temp = ManifestScratchFolder()
        let dir = temp.folder("d")
        ManifestScratchFolder.write(exec("Alpha"), to: dir + "/a.json")
        ManifestScratchFolder.write(exec("Alpha"), to: dir + "/b-again.json")
        ManifestScratchFolder.write(#"{"target": "Kv2", "actions": ["a"], "exec": "/bin/true"}"#, to: dir + "/kv2.json")
        ManifestScratchFolder.write(#"{"target": "not a name", "actions": ["a"], "exec": ["/bin/true"]}"#, to: dir + "/m.json")
        ManifestScratchFolder.write(#"{"target": "mediator", "actions": ["a"], "exec": ["/bin/true"]}"#, to: dir + "/n.json")
        ManifestScratchFolder.write(#"{"target": "Kv3""#, to: dir + "/o.json")
        symlink(dir + "/nowhere", dir + "/p.json")
        let (manifests, skipped) = ManifestLoader(directories: [dir]).load()
        #expect(manifests.map(\.target) == ["Alpha"])
        // The folder walk's problems (the broken link) come first.
        #expect(skipped.map(\.problem.file) == ["p", "b-again", "kv2", "m", "n", "o"].map { dir + "/\($0).json" })
        #expect(skipped.map(\.target) == [nil, "Alpha", "Kv2", nil, nil, nil])
        #expect(skipped.dropFirst(2).first?.problem.member == "exec")
    }

    @Test func aFileWhereAFolderShouldBeIsAProblem() {
        let temp = ManifestScratchFolder()
        let path = ManifestScratchFolder.write("{}", to: temp.path + "/components.d")
        let (manifests, skipped) = ManifestLoader(directories: [path]).load()
        let problems = skipped.map(\.problem)
        #expect(manifests.isEmpty)
        #expect(problems == [ManifestProblem(file: path, reason: "is not a folder")])
    }

    @Test func anOversizedFileIsAProblem() {
        let temp = ManifestScratchFolder()
        let dir = temp.folder("d")
        let padding = String(repeating: " ", count: ManifestLoader.maxFileBytes)
        ManifestScratchFolder.write(exec("Big") + padding, to: dir + "/big.json")
        let (manifests, skipped) = ManifestLoader(directories: [dir]).load()
        let problems = skipped.map(\.problem)
        #expect(manifests.isEmpty)
        #expect(problems == [ManifestProblem(file: dir + "/big.json", reason: "is larger than 1048576 bytes")])
    }

    @Test func defaultDirectories() {
        #expect(
            ManifestLoader.defaultDirectories(userInstance: false, environment: ["XDG_CONFIG_HOME": "/x", "HOME": "/home/u"])
                == ["/etc/mediator/components.d", "/usr/lib/mediator/components.d"])
        #expect(
            ManifestLoader.defaultDirectories(userInstance: true, environment: ["XDG_CONFIG_HOME": "/cfg", "HOME": "/home/u"])
                == ["/cfg/mediator/components.d"])
        #expect(
            ManifestLoader.defaultDirectories(userInstance: true, environment: ["HOME": "/home/u"])
                == ["/home/u/.config/mediator/components.d"])
        // The XDG spec: an empty or relative value is ignored.
        #expect(
            ManifestLoader.defaultDirectories(userInstance: true, environment: ["XDG_CONFIG_HOME": "", "HOME": "/home/u"])
                == ["/home/u/.config/mediator/components.d"])
        #expect(
            ManifestLoader.defaultDirectories(userInstance: true, environment: ["XDG_CONFIG_HOME": "cfg", "HOME": "/home/u/"])
                == ["/home/u/.config/mediator/components.d"])
    }
}
