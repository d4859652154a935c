import MediatorConfiguration
import MediatorProtocol
import Testing

@testable import MediatorDaemon

/// Manifest files the loader skipped: `status` and `list` report them, and
/// a call to their target says why it finds no component.
@Suite("Broker: skipped manifests")
struct BrokerSkippedManifestTests {
    static let kv2 = SkippedManifest(
        problem: ManifestProblem(file: "/c/kv2.json", member: "exec", reason: "must be a non-empty array of strings, got \"x\""),
        target: "Kv2")
    static let notJSON = SkippedManifest(problem: ManifestProblem(file: "/c/old.json", reason: "is not valid JSON: expected a value at byte 0"))

    func driver(_ manifests: [Manifest] = [], skipped: [SkippedManifest]) -> BrokerDriver {
        let d = BrokerDriver()
        d.apply(d.broker.loadManifests(manifests, skipped: skipped, now: d.now))
        d.connect(1)
        return d
    }

    @Test func statusOfATargetWhoseManifestWasSkippedSaysInvalidAndWhy() {
        let d = driver(skipped: [Self.kv2, Self.notJSON])
        let status = d.daemon("status", #"{"target":"Kv2"}"#, from: 1)?["result"]
        #expect(status?["state"] == "invalid")
        #expect(status?["manifest"] == "/c/kv2.json")
        #expect(status?["problem"] == Self.kv2.problem.json)
        #expect(status?["instances"] == [])
        #expect(status?["actions"] == nil)
        // A name no file declares is still not found.
        #expect(d.daemon("status", #"{"target":"Other"}"#, from: 1)?["error"]?["code"] == "target_not_found")
    }

    @Test func listShowsTheInvalidTargetAndTheFilesNoTargetStandsFor() {
        let d = driver([BrokerActivationTests.manifest("Notes")], skipped: [Self.kv2, Self.notJSON])
        let list = d.daemon("list", from: 1)?["result"]
        let targets = list?["targets"]?.arrayValue ?? []
        #expect(targets.compactMap { $0["target"]?.stringValue } == ["Kv2", "Notes"])
        #expect(targets.first?["state"] == "invalid")
        #expect(targets.first?["actions"] == [])
        #expect(targets.first?["problem"]?["member"] == "exec")
        #expect(list?["invalid_manifests"] == [Self.notJSON.problem.json])
        #expect(list?["invalid_manifests_omitted"] == nil)
        // Only the first page carries the files.
        let later = d.daemon("list", #"{"after":"Kv2"}"#, from: 1)?["result"]
        #expect(later?["targets"]?.arrayValue?.compactMap { $0["target"]?.stringValue } == ["Notes"])
        #expect(later?["invalid_manifests"] == nil)
    }

    @Test func aCallToAnInvalidTargetSaysItsManifestIsInvalid() {
        let d = driver(skipped: [Self.kv2])
        d.send(#"{"id":1,"target":"Kv2","action":"get"}"#, from: 1)
        let error = d.takeOne(1)?["error"]
        #expect(error?["code"] == "target_not_found")
        #expect(
            error?["message"]
                == #"no component serves target "Kv2"; its manifest is invalid: /c/kv2.json: member "exec": must be a non-empty array of strings, got "x""#
        )
        let start = d.daemon("start", #"{"target":"Kv2"}"#, from: 1)?["error"]
        #expect(start?["code"] == "target_not_found")
        #expect(start?["message"]?.stringValue?.contains("its manifest is invalid: /c/kv2.json") == true)
    }

    @Test func aTargetServedOtherwiseIsNotInvalidAndItsSkippedFileIsListedByFile() {
        // A registered component, and a loaded manifest from another file, both win over a skipped file.
        let duplicate = SkippedManifest(
            problem: ManifestProblem(file: "/c/notes-2.json", member: "target", reason: "target \"Notes\" is already declared by /m/Notes.json"),
            target: "Notes")
        let d = driver([BrokerActivationTests.manifest("Notes")], skipped: [Self.kv2, duplicate])
        d.connect(2)
        _ = d.register("Kv2", from: 2)
        #expect(d.daemon("status", #"{"target":"Kv2"}"#, from: 1)?["result"]?["state"] == "running")
        #expect(d.daemon("status", #"{"target":"Notes"}"#, from: 1)?["result"]?["state"] == "activatable")
        let list = d.daemon("list", from: 1)?["result"]
        #expect(list?["targets"]?.arrayValue?.compactMap { $0["state"]?.stringValue } == ["running", "activatable"])
        let files = list?["invalid_manifests"]?.arrayValue ?? []
        #expect(files.compactMap { $0["file"]?.stringValue } == ["/c/kv2.json", "/c/notes-2.json"])
        #expect(files.compactMap { $0["target"]?.stringValue } == ["Kv2", "Notes"])
        // Once the component leaves, the name is the invalid file's again.
        d.disconnect(2)
        #expect(d.daemon("status", #"{"target":"Kv2"}"#, from: 1)?["result"]?["state"] == "invalid")
    }

    @Test func aReloadReplacesTheSkippedFiles() {
        let d = driver(skipped: [Self.kv2])
        d.apply(d.broker.loadManifests([], skipped: [], now: d.now))
        #expect(d.daemon("status", #"{"target":"Kv2"}"#, from: 1)?["error"]?["code"] == "target_not_found")
        #expect(d.daemon("list", from: 1)?["result"] == ["targets": []])
    }

    @Test func atMostSoManySkippedFilesAreKeptAndTheRestCounted() {
        let many = (0..<(ComponentActivation.maxSkippedManifests + 3)).map {
            SkippedManifest(problem: ManifestProblem(file: "/c/\($0).json", reason: "is not valid JSON"))
        }
        let d = driver(skipped: many)
        let list = d.daemon("list", from: 1)?["result"]
        #expect(list?["invalid_manifests"]?.arrayValue?.count == ComponentActivation.maxSkippedManifests)
        #expect(list?["invalid_manifests_omitted"] == 3)
    }
}
