import Foundation
import MediatorProtocol
import Testing

@testable import MediatorConfiguration

#if canImport(Glibc)
import Glibc
#endif

/// What `mediatorctl verify` reports: the daemon's own problems, each file
/// read as a manifest or a policy file by flag, folder name or content.
@Suite("ConfigFileCheck")
struct ConfigFileCheckTests {
    let check = ConfigFileCheck(accounts: FakeAccounts())
    static let manifest = #"{"target": "Ok", "actions": ["a"], "exec": ["/bin/true"]}"#
    static let policy = #"{"rules": [{"match": {"user": "alice"}, "allow": {"call": ["Notes/*"]}}]}"#

    @Test func validFilesHaveNoProblem() {
        let temp = ManifestScratchFolder()
        let components = temp.folder("components.d")
        let policies = temp.folder("policy.d")
        let other = temp.folder("drafts")
        ManifestScratchFolder.write(Self.manifest, to: components + "/ok.json")
        ManifestScratchFolder.write(Self.policy, to: policies + "/ok.json")
        ManifestScratchFolder.write(Self.manifest, to: other + "/m.json")
        ManifestScratchFolder.write(Self.policy, to: other + "/p.json")
        ManifestScratchFolder.write("", to: other + "/masked.json")
        for path in [components, policies, components + "/ok.json", policies + "/ok.json", other + "/m.json", other + "/p.json",
                     other + "/masked.json"] {
            #expect(check.problems(path).isEmpty, "\(path): \(check.problems(path))")
        }
    }

    @Test func theKindComesFromTheFlagElseTheFolderElseTheContent() {
        let temp = ManifestScratchFolder()
        let policies = temp.folder("policy.d")
        let other = temp.folder("drafts")
        // A manifest in policy.d is read as a policy file, and refused as one.
        let misplaced = ManifestScratchFolder.write(Self.manifest, to: policies + "/m.json")
        #expect(check.problems(misplaced).map(\.member) == ["actions"])
        #expect(check.problems(misplaced).first?.reason.hasPrefix("unknown member; known members: rules") == true)
        #expect(check.problems(misplaced, kind: .manifest).isEmpty)
        // Elsewhere, "rules" makes a policy file.
        let policy = ManifestScratchFolder.write(Self.policy, to: other + "/p.json")
        #expect(check.problems(policy).isEmpty)
        #expect(check.problems(policy, kind: .manifest).first?.member == "rules")
        // A folder of another name needs the flag.
        #expect(check.problems(other) == [
            ConfigFileProblem(file: other, reason: "is neither a components.d nor a policy.d folder: give --manifest or --policy")
        ])
        // With it, the folder is walked as the daemon walks policy.d: the manifest in it is refused.
        ManifestScratchFolder.write(Self.manifest, to: other + "/m.json")
        #expect(check.problems(other, kind: .policy).map(\.file) == [other + "/m.json"])
    }

    @Test func theDaemonsProblemsAreReported() {
        let temp = ManifestScratchFolder()
        let components = temp.folder("components.d")
        let policies = temp.folder("policy.d")
        let kv2 = ManifestScratchFolder.write(#"{"target": "Kv2", "actions": ["a"], "exec": "/bin/true"}"#, to: components + "/kv2.json")
        ManifestScratchFolder.write(Self.manifest, to: components + "/a.json")
        let again = ManifestScratchFolder.write(Self.manifest, to: components + "/b.json")
        let interface = ManifestScratchFolder.write(
            #"{"target": "I", "exec": ["/bin/true"], "interface": "I.mediator.json"}"#, to: components + "/i.json")
        let notJSON = ManifestScratchFolder.write("{", to: components + "/x.json")
        let stranger = ManifestScratchFolder.write(
            #"{"rules": [{"match": {"user": "mallory"}, "allow": {"call": ["*/*"]}}]}"#, to: policies + "/u.json")
        let writable = ManifestScratchFolder.write(Self.policy, to: policies + "/w.json")
        chmod(writable, 0o666)

        #expect(check.problems(kv2) == [
            ConfigFileProblem(file: kv2, member: "exec", reason: #"must be a non-empty array of strings, got "/bin/true""#)
        ])
        #expect(check.problems(interface) == [
            ConfigFileProblem(file: interface, member: "interface", reason: components + "/I.mediator.json: does not exist")
        ])
        // The folder as the daemon walks it: a second file for a target too.
        #expect(check.problems(components).map(\.file) == [again, interface, kv2, notJSON])
        #expect(check.problems(again).isEmpty, "alone, the second file is valid")
        #expect(check.problems(stranger) == [
            ConfigFileProblem(file: stranger, member: "rules[0].match.user", reason: #"no user named "mallory"; the rule is skipped"#)
        ])
        #expect(check.problems(writable).first?.reason.hasPrefix("is writable by its group or others (mode 0666)") == true)
        #expect(check.problems(policies).map(\.file) == [stranger, writable])
    }

    @Test func aPathThatIsNotThereIsAProblem() {
        #expect(check.problems("/nonexistent/kv2.json") == [ConfigFileProblem(file: "/nonexistent/kv2.json", reason: "does not exist")])
    }

    @Test func theFolderOfAPath() {
        #expect(ConfigFileCheck.folder(of: "a.json") == ".")
        #expect(ConfigFileCheck.folder(of: "/a.json") == "/")
        #expect(ConfigFileCheck.folder(of: "x/components.d/a.json") == "x/components.d")
        #expect(ConfigFileCheck.kind(ofFolder: "/nonexistent/components.d") == .manifest)
        #expect(ConfigFileCheck.kind(ofFolder: "/nonexistent/policy.d/") == .policy)
        #expect(ConfigFileCheck.kind(ofFolder: "/") == nil)
    }
}
