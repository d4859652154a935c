import Foundation
import MediatorProtocol
import Testing

@testable import MediatorConfiguration

#if canImport(Glibc)
import Glibc
#endif

/// Every policy suite, so that `swift test --filter PolicyTests` runs them all.
@Suite("Policy")
struct PolicyTests {}

// MARK: - Fixtures

/// Accounts from a table, so tests never depend on the machine's.
struct FakeAccounts: AccountDirectory {
    var users: [String: UInt32] = ["root": 0, "alice": 1000, "bob": 1001, "carol": 1002, "notes": 990, "mediator": 980]
    var groups: [String: UInt32] = ["root": 0, "staff": 50, "audio": 29, "wheel": 10, "notes": 990]

    func uid(ofUser name: String) -> UInt32? { users[name] }
    func gid(ofGroup name: String) -> UInt32? { groups[name] }
    func userName(_ uid: UInt32) -> String? { users.first { $0.value == uid }?.key }
}

private let accounts = FakeAccounts()
private let policyFile = "/etc/mediator/policy.d/test.json"

/// alice: primary group 1000, supplementary staff (50).
private let alice = PolicySubject(uid: 1000, gid: 1000, groups: [1000, 50], userName: "alice")
/// bob: primary group staff (50), supplementary audio (29); no name known.
private let bob = PolicySubject(uid: 1001, gid: 50, groups: [50, 29])
/// carol: in no group of interest.
private let carol = PolicySubject(uid: 1002, gid: 1002, groups: [1002], userName: "carol")
private let root = PolicySubject(uid: 0, gid: 0, groups: [0], userName: "root")
private let daemonUser = PolicySubject(uid: 980, gid: 980, groups: [980], userName: "mediator")

private func readPolicy(_ json: String) throws -> Policy {
    try Policy(json: JSONParser.parse(json), file: policyFile, accounts: accounts)
}

/// The example of the issue: alice's rule.
private let aliceRule = #"""
    {"rules": [{"match": {"user": "alice"}, "allow": {"register": ["Notes", "Net.*"], "call": ["Notes/*", "*/ping"],
      "subscribe": ["user.*"], "publish": ["user.*"], "monitor": false}}]}
    """#

// MARK: - Checking requests

struct PolicyCheckCase: Sendable, CustomTestStringConvertible {
    var name: String
    var rules: String
    var request: PolicyRequest
    var subject: PolicySubject
    /// nil: allowed.
    var denial: String?
    var testDescription: String { name }
}

private let checkCases: [PolicyCheckCase] = [
    // register
    PolicyCheckCase(
        name: "register an exact target", rules: aliceRule,
        request: .register(target: "Notes"), subject: alice, denial: nil),
    PolicyCheckCase(
        name: "register is case-sensitive", rules: aliceRule, request: .register(target: "notes"), subject: alice,
        denial: #"uid 1000 (alice) may not register "notes""#),
    PolicyCheckCase(
        name: "register under a prefix", rules: aliceRule,
        request: .register(target: "Net.wifi"), subject: alice, denial: nil),
    PolicyCheckCase(
        name: "register deep under a prefix", rules: aliceRule,
        request: .register(target: "Net.a.b"), subject: alice, denial: nil),
    PolicyCheckCase(
        name: "a prefix does not match the bare name", rules: aliceRule, request: .register(target: "Net"), subject: alice,
        denial: #"uid 1000 (alice) may not register "Net""#),
    PolicyCheckCase(
        name: "a prefix does not match a longer word", rules: aliceRule, request: .register(target: "Network"), subject: alice,
        denial: #"uid 1000 (alice) may not register "Network""#),
    PolicyCheckCase(
        name: "another user gets nothing from alice's rule", rules: aliceRule, request: .register(target: "Notes"), subject: bob,
        denial: #"uid 1001 may not register "Notes""#),
    // call
    PolicyCheckCase(
        name: "call any action of a target", rules: aliceRule,
        request: .call(target: "Notes", action: "add"), subject: alice, denial: nil),
    PolicyCheckCase(
        name: "call an action starting with _", rules: aliceRule,
        request: .call(target: "Notes", action: "_sync"), subject: alice,
        denial: nil),
    PolicyCheckCase(
        name: "call ping anywhere", rules: aliceRule,
        request: .call(target: "Clock", action: "ping"), subject: alice, denial: nil),
    PolicyCheckCase(
        name: "call another action elsewhere", rules: aliceRule, request: .call(target: "Clock", action: "now"), subject: alice,
        denial: #"uid 1000 (alice) may not call "Clock/now""#),
    PolicyCheckCase(
        name: "call with a prefix target and an exact action",
        rules: #"{"rules": [{"match": {}, "allow": {"call": ["Net.*/get"]}}]}"#,
        request: .call(target: "Net.wifi", action: "get"), subject: carol, denial: nil),
    PolicyCheckCase(
        name: "call with a prefix target and another action",
        rules: #"{"rules": [{"match": {}, "allow": {"call": ["Net.*/get"]}}]}"#,
        request: .call(target: "Net.wifi", action: "set"), subject: carol,
        denial: #"uid 1002 (carol) may not call "Net.wifi/set""#),
    PolicyCheckCase(
        name: "call with a prefix action", rules: #"{"rules": [{"match": {}, "allow": {"call": ["Notes/read.*"]}}]}"#,
        request: .call(target: "Notes", action: "read.all"), subject: carol, denial: nil),
    PolicyCheckCase(
        name: "call everything", rules: #"{"rules": [{"match": {}, "allow": {"call": ["*/*"]}}]}"#,
        request: .call(target: "Anything", action: "at_all"), subject: bob, denial: nil),
    // subscribe
    PolicyCheckCase(
        name: "subscribe to the allowed pattern", rules: aliceRule,
        request: .subscribe(pattern: "user.*"), subject: alice, denial: nil),
    PolicyCheckCase(
        name: "subscribe to one event under it", rules: aliceRule,
        request: .subscribe(pattern: "user.login"), subject: alice, denial: nil),
    PolicyCheckCase(
        name: "subscribe to a narrower pattern", rules: aliceRule,
        request: .subscribe(pattern: "user.session.*"), subject: alice, denial: nil),
    PolicyCheckCase(
        name: "subscribe to everything is wider", rules: aliceRule, request: .subscribe(pattern: "*"), subject: alice,
        denial: #"uid 1000 (alice) may not subscribe to "*""#),
    PolicyCheckCase(
        name: "subscribe elsewhere", rules: aliceRule, request: .subscribe(pattern: "system.boot"), subject: alice,
        denial: #"uid 1000 (alice) may not subscribe to "system.boot""#),
    PolicyCheckCase(
        name: "subscribe to the bare prefix name", rules: aliceRule, request: .subscribe(pattern: "user"), subject: alice,
        denial: #"uid 1000 (alice) may not subscribe to "user""#),
    // publish
    PolicyCheckCase(
        name: "publish under the prefix", rules: aliceRule,
        request: .publish(event: "user.login"), subject: alice, denial: nil),
    PolicyCheckCase(
        name: "publish elsewhere", rules: aliceRule, request: .publish(event: "system.boot"), subject: alice,
        denial: #"uid 1000 (alice) may not publish "system.boot""#),
    // monitor
    PolicyCheckCase(
        name: "monitor false", rules: aliceRule, request: .monitor, subject: alice, denial: "uid 1000 (alice) may not monitor"),
    PolicyCheckCase(
        name: "monitor true", rules: #"{"rules": [{"match": {"uid": 1000}, "allow": {"monitor": true}}]}"#, request: .monitor,
        subject: alice, denial: nil),
    PolicyCheckCase(
        name: "monitor omitted means false", rules: #"{"rules": [{"match": {}, "allow": {"call": ["*/*"]}}]}"#,
        request: .monitor, subject: alice, denial: "uid 1000 (alice) may not monitor"),
    // send_fds
    PolicyCheckCase(
        name: "send_fds to an exact target", rules: #"{"rules": [{"match": {}, "allow": {"send_fds": ["Files"]}}]}"#,
        request: .sendDescriptors(target: "Files"), subject: carol, denial: nil),
    PolicyCheckCase(
        name: "send_fds under a prefix", rules: #"{"rules": [{"match": {}, "allow": {"send_fds": ["Net.*"]}}]}"#,
        request: .sendDescriptors(target: "Net.wifi"), subject: carol, denial: nil),
    PolicyCheckCase(
        name: "send_fds to another target", rules: #"{"rules": [{"match": {}, "allow": {"send_fds": ["Files"]}}]}"#,
        request: .sendDescriptors(target: "Notes"), subject: carol,
        denial: #"uid 1002 (carol) may not send file descriptors to "Notes""#),
    PolicyCheckCase(
        name: "a call grant is not a send_fds grant", rules: #"{"rules": [{"match": {}, "allow": {"call": ["*/*"]}}]}"#,
        request: .sendDescriptors(target: "Notes"), subject: alice,
        denial: #"uid 1000 (alice) may not send file descriptors to "Notes""#),
    PolicyCheckCase(
        name: "send_fds for one user only",
        rules: #"{"rules": [{"match": {"user": "alice"}, "allow": {"send_fds": ["*"]}}]}"#,
        request: .sendDescriptors(target: "Notes"), subject: bob, denial: #"uid 1001 may not send file descriptors to "Notes""#),
    PolicyCheckCase(
        name: "root may send descriptors with no rules", rules: #"{"rules": []}"#,
        request: .sendDescriptors(target: "Any"), subject: root, denial: nil),
    // match
    PolicyCheckCase(
        name: "match by uid", rules: #"{"rules": [{"match": {"uid": 1001}, "allow": {"register": ["B"]}}]}"#,
        request: .register(target: "B"), subject: bob, denial: nil),
    PolicyCheckCase(
        name: "match by primary group name", rules: #"{"rules": [{"match": {"group": "staff"}, "allow": {"register": ["S"]}}]}"#,
        request: .register(target: "S"), subject: bob, denial: nil),
    PolicyCheckCase(
        name: "match by supplementary group name", rules: #"{"rules": [{"match": {"group": "staff"}, "allow": {"register": ["S"]}}]}"#,
        request: .register(target: "S"), subject: alice, denial: nil),
    PolicyCheckCase(
        name: "match by supplementary gid", rules: #"{"rules": [{"match": {"gid": 29}, "allow": {"register": ["A"]}}]}"#,
        request: .register(target: "A"), subject: bob, denial: nil),
    PolicyCheckCase(
        name: "not in the group", rules: #"{"rules": [{"match": {"group": "staff"}, "allow": {"register": ["S"]}}]}"#,
        request: .register(target: "S"), subject: carol, denial: #"uid 1002 (carol) may not register "S""#),
    PolicyCheckCase(
        name: "user and group must both hold (both do)",
        rules: #"{"rules": [{"match": {"user": "bob", "group": "audio"}, "allow": {"register": ["X"]}}]}"#,
        request: .register(target: "X"), subject: bob, denial: nil),
    PolicyCheckCase(
        name: "user and group must both hold (the group does not)",
        rules: #"{"rules": [{"match": {"user": "alice", "group": "audio"}, "allow": {"register": ["X"]}}]}"#,
        request: .register(target: "X"), subject: alice, denial: #"uid 1000 (alice) may not register "X""#),
    PolicyCheckCase(
        name: "group and gid must both hold",
        rules: #"{"rules": [{"match": {"group": "staff", "gid": 29}, "allow": {"register": ["X"]}}]}"#,
        request: .register(target: "X"), subject: alice, denial: #"uid 1000 (alice) may not register "X""#),
    PolicyCheckCase(
        name: "group and gid both held", rules: #"{"rules": [{"match": {"group": "staff", "gid": 29}, "allow": {"register": ["X"]}}]}"#,
        request: .register(target: "X"), subject: bob, denial: nil),
    PolicyCheckCase(
        name: "user and the same uid", rules: #"{"rules": [{"match": {"user": "bob", "uid": 1001}, "allow": {"register": ["X"]}}]}"#,
        request: .register(target: "X"), subject: bob, denial: nil),
    // rules add up
    PolicyCheckCase(
        name: "rules add up: the second grants",
        rules: #"""
            {"rules": [{"match": {}, "allow": {"call": ["*/ping"]}},
                       {"match": {"group": "staff"}, "allow": {"call": ["Notes/*"]}}]}
            """#,
        request: .call(target: "Notes", action: "add"), subject: alice, denial: nil),
    PolicyCheckCase(
        name: "rules add up: neither grants",
        rules: #"""
            {"rules": [{"match": {}, "allow": {"call": ["*/ping"]}},
                       {"match": {"group": "staff"}, "allow": {"call": ["Notes/*"]}}]}
            """#,
        request: .call(target: "Notes", action: "add"), subject: carol, denial: #"uid 1002 (carol) may not call "Notes/add""#),
    PolicyCheckCase(
        name: "a rule granting nothing", rules: #"{"rules": [{"match": {}, "allow": {}}]}"#, request: .publish(event: "a.b"),
        subject: carol, denial: #"uid 1002 (carol) may not publish "a.b""#),
    PolicyCheckCase(
        name: "no rules", rules: #"{"rules": []}"#, request: .call(target: "Notes", action: "add"), subject: bob,
        denial: #"uid 1001 may not call "Notes/add""#),
    // root and the daemon's own actions
    PolicyCheckCase(
        name: "root may register with no rules", rules: #"{"rules": []}"#,
        request: .register(target: "Any"), subject: root, denial: nil),
    PolicyCheckCase(
        name: "root may monitor with no rules", rules: #"{"rules": []}"#,
        request: .monitor, subject: root, denial: nil),
    PolicyCheckCase(
        name: "root may subscribe to everything", rules: #"{"rules": []}"#,
        request: .subscribe(pattern: "*"), subject: root, denial: nil),
    PolicyCheckCase(
        name: "anyone may list", rules: #"{"rules": []}"#,
        request: .call(target: "mediator", action: "list"), subject: carol, denial: nil),
    PolicyCheckCase(
        name: "anyone may describe", rules: #"{"rules": []}"#,
        request: .call(target: "mediator", action: "describe"), subject: bob,
        denial: nil),
    PolicyCheckCase(
        name: "stop needs a rule", rules: #"{"rules": []}"#, request: .call(target: "mediator", action: "stop"), subject: carol,
        denial: #"uid 1002 (carol) may not call "mediator/stop""#),
    PolicyCheckCase(
        name: "stop with a rule", rules: #"{"rules": [{"match": {"user": "carol"}, "allow": {"call": ["mediator/stop"]}}]}"#,
        request: .call(target: "mediator", action: "stop"), subject: carol, denial: nil),
]

extension PolicyTests {
    @Suite("Checking requests")
    struct Checking {
        @Test(arguments: checkCases)
        func check(_ testCase: PolicyCheckCase) throws {
            let loaded = try readPolicy(testCase.rules)
            #expect(loaded.skippedRules.isEmpty)
            #expect(loaded.check(testCase.request, by: testCase.subject) == testCase.denial)
            #expect(loaded.allows(testCase.request, by: testCase.subject) == (testCase.denial == nil))
        }

        @Test func theIssueExampleReadsAsExpected() throws {
            let loaded = try readPolicy(aliceRule)
            #expect(
                loaded
                    == Policy(rules: [
                        Policy.Rule(
                            match: Policy.Match(uid: 1000),
                            allow: Policy.Allow(
                                register: [.exact("Notes"), .prefix("Net.")],
                                call: [
                                    Policy.CallPattern(target: .exact("Notes"), action: .any),
                                    Policy.CallPattern(target: .any, action: .exact("ping")),
                                ],
                                subscribe: [.prefix("user.")], publish: [.prefix("user.")], monitor: false))
                    ]))
            #expect(!loaded.isDefault)
        }

        @Test func matchByNamesResolvesToIDs() throws {
            let loaded = try readPolicy(#"{"rules": [{"match": {"user": "notes", "group": "staff", "gid": 29}, "allow": {}}]}"#)
            #expect(loaded.rules.map(\.match) == [Policy.Match(uid: 990, gids: [29, 50])])
            let same = try readPolicy(#"{"rules": [{"match": {"group": "staff", "gid": 50}, "allow": {}}]}"#)
            #expect(same.rules.map(\.match) == [Policy.Match(gids: [50])])
        }

        @Test func theSubjectsPrimaryGroupCountsEvenWhenNotListed() {
            let subject = PolicySubject(uid: 5, gid: 50, groups: [])
            let staff = Policy(rules: [Policy.Rule(match: Policy.Match(gids: [50]), allow: Policy.Allow(monitor: true))])
            #expect(staff.check(.monitor, by: subject) == nil)
            #expect(staff.check(.monitor, by: PolicySubject(uid: 5, gid: 5, groups: [5])) == "uid 5 may not monitor")
        }

        @Test func deniedMessagesNameWhatWasDenied() {
            let none = Policy(rules: [])
            #expect(none.check(.register(target: "Notes"), by: alice) == #"uid 1000 (alice) may not register "Notes""#)
            #expect(none.check(.call(target: "Notes", action: "add"), by: alice) == #"uid 1000 (alice) may not call "Notes/add""#)
            #expect(none.check(.subscribe(pattern: "user.*"), by: alice) == #"uid 1000 (alice) may not subscribe to "user.*""#)
            #expect(none.check(.publish(event: "user.login"), by: alice) == #"uid 1000 (alice) may not publish "user.login""#)
            #expect(none.check(.monitor, by: alice) == "uid 1000 (alice) may not monitor")
            #expect(none.check(.monitor, by: bob) == "uid 1001 may not monitor")
            // Odd bytes are escaped, never pasted raw into a log line.
            #expect(none.check(.publish(event: "a\"b\n"), by: bob) == #"uid 1001 may not publish "a\"b\n""#)
        }

        @Test func rootMayDoAnythingEvenWithoutRules() {
            let none = Policy(rules: [])
            let requests: [PolicyRequest] = [
                .register(target: "X"), .call(target: "X", action: "y"), .subscribe(pattern: "*"), .publish(event: "e"), .monitor,
            ]
            for request in requests {
                #expect(none.check(request, by: root) == nil)
                #expect(none.check(request, by: PolicySubject(uid: 0, gid: 1000, groups: [])) == nil)
            }
            // gid 0 alone is not root.
            #expect(none.check(.monitor, by: PolicySubject(uid: 7, gid: 0, groups: [0])) == "uid 7 may not monitor")
        }

        @Test func openDaemonActionsNeedNoRule() {
            let none = Policy(rules: [])
            for action in Policy.openDaemonActions.sorted() {
                #expect(none.check(.call(target: "mediator", action: action), by: carol) == nil)
            }
            for action in ["start", "stop", "register", "subscribe", "publish", "open", "future_action"] {
                #expect(none.check(.call(target: "mediator", action: action), by: carol) != nil)
            }
            // The same action names elsewhere are ordinary calls.
            #expect(none.check(.call(target: "Notes", action: "list"), by: carol) == #"uid 1002 (carol) may not call "Notes/list""#)
        }
    }
}

// MARK: - Patterns

struct PolicyCoverCase: Sendable, CustomTestStringConvertible {
    var allowed: String
    var requested: String
    var covered: Bool
    var testDescription: String { "\(allowed) \(covered ? "covers" : "does not cover") \(requested)" }
}

private let coverCases: [PolicyCoverCase] = [
    PolicyCoverCase(allowed: "*", requested: "*", covered: true),
    PolicyCoverCase(allowed: "*", requested: "user.*", covered: true),
    PolicyCoverCase(allowed: "*", requested: "user.login", covered: true),
    PolicyCoverCase(allowed: "*", requested: "mediator.target.up", covered: true),
    PolicyCoverCase(allowed: "user.*", requested: "user.*", covered: true),
    PolicyCoverCase(allowed: "user.*", requested: "user.session.*", covered: true),
    PolicyCoverCase(allowed: "user.*", requested: "user.login", covered: true),
    PolicyCoverCase(allowed: "user.*", requested: "user.a.b.c", covered: true),
    PolicyCoverCase(allowed: "user.*", requested: "*", covered: false),
    PolicyCoverCase(allowed: "user.*", requested: "user", covered: false),
    PolicyCoverCase(allowed: "user.*", requested: "users.*", covered: false),
    PolicyCoverCase(allowed: "user.*", requested: "users.x", covered: false),
    PolicyCoverCase(allowed: "user.*", requested: "system.*", covered: false),
    PolicyCoverCase(allowed: "user.session.*", requested: "user.*", covered: false),
    PolicyCoverCase(allowed: "user.session.*", requested: "user.session.new", covered: true),
    PolicyCoverCase(allowed: "user.login", requested: "user.login", covered: true),
    PolicyCoverCase(allowed: "user.login", requested: "user.logout", covered: false),
    PolicyCoverCase(allowed: "user.login", requested: "user.*", covered: false),
    PolicyCoverCase(allowed: "user.login", requested: "*", covered: false),
    PolicyCoverCase(allowed: "user.login", requested: "User.login", covered: false),
    // An invalid requested pattern is one literal name: only * covers it.
    PolicyCoverCase(allowed: "user.*", requested: "user*", covered: false),
    PolicyCoverCase(allowed: "*", requested: "user*", covered: true),
]

extension PolicyTests {
    @Suite("Patterns")
    struct Patterns {
        @Test(arguments: coverCases)
        func subscribeCoverage(_ testCase: PolicyCoverCase) throws {
            let rules = #"{"rules": [{"match": {}, "allow": {"subscribe": ["\#(testCase.allowed)"]}}]}"#
            let loaded = try readPolicy(rules)
            let denial = loaded.check(.subscribe(pattern: testCase.requested), by: carol)
            #expect(
                denial == (testCase.covered ? nil : "uid 1002 (carol) may not subscribe to \(Policy.quoted(testCase.requested))"))
        }

        @Test func coverageAgreesWithEventMatching() {
            // Whenever A covers P, every sample event P matches is matched by A.
            let patterns = ["*", "a.*", "a.b.*", "a.b", "a", "ab.*", "b.*"]
            let events = ["a", "a.b", "a.b.c", "a.c", "ab.c", "b.x", "ab"]
            for allowed in patterns {
                for requested in patterns {
                    let a = Policy.Pattern(allowed, kind: .event)!
                    let p = Policy.Pattern(requested, kind: .event)!
                    guard a.covers(p) else { continue }
                    for event in events where NameRules.eventPattern(requested, matches: event) {
                        #expect(NameRules.eventPattern(allowed, matches: event), "\(allowed) covers \(requested) but not \(event)")
                    }
                }
            }
        }

        @Test func matchingAgreesWithSubscriptionPatterns() {
            let patterns = ["*", "user.*", "user.login", "u.*"]
            let events = ["user", "user.", "user.login", "user.a.b", "users.x", "u", "u.x", "User.login"]
            for text in patterns {
                let pattern = Policy.Pattern(text, kind: .event)!
                for event in events {
                    #expect(pattern.matches(event) == NameRules.eventPattern(text, matches: event), "\(text) vs \(event)")
                }
            }
        }

        @Test func patternsRead() {
            #expect(Policy.Pattern("*", kind: .target) == .any)
            #expect(Policy.Pattern("Net.*", kind: .target) == .prefix("Net."))
            #expect(Policy.Pattern("Notes", kind: .target) == .exact("Notes"))
            #expect(Policy.Pattern("_private", kind: .action) == .exact("_private"))
            #expect(Policy.Pattern("_private.*", kind: .action) == .prefix("_private."))
            #expect(Policy.Pattern("_private", kind: .target) == nil)
            // A trailing dot is a name byte like any other (NameRules), not a pattern.
            #expect(Policy.Pattern("Net.", kind: .target) == .exact("Net."))
            for bad in ["", "Net*", "*.x", "**", ".*", "a b", "Net.*.*", "1abc", "a/b"] {
                #expect(Policy.Pattern(bad, kind: .target) == nil, "\(bad)")
                #expect(Policy.Pattern(bad, kind: .event) == nil, "\(bad)")
            }
            #expect(Policy.Pattern("Net.*", kind: .target)?.description == "Net.*")
            #expect(Policy.CallPattern("Notes/*") == Policy.CallPattern(target: .exact("Notes"), action: .any))
            #expect(Policy.CallPattern("Net.*/get")?.description == "Net.*/get")
            for bad in ["Notes", "Notes/", "/add", "Notes/add/x", "*", "Notes//add", "No tes/add"] {
                #expect(Policy.CallPattern(bad) == nil, "\(bad)")
            }
        }
    }
}

// MARK: - The default policy

extension PolicyTests {
    @Suite("The default policy")
    struct TheDefault {
        let policy = Policy.defaultPolicy(daemonUID: 980)

        @Test func isMarkedDefault() {
            #expect(policy.isDefault)
            #expect(policy.skippedRules.isEmpty)
        }

        @Test func theDaemonsUserAndRootMayDoAnything() {
            let requests: [PolicyRequest] = [
                .register(target: "Notes"), .call(target: "Notes", action: "add"), .subscribe(pattern: "*"),
                .publish(event: "user.login"), .monitor,
            ]
            for request in requests {
                #expect(policy.check(request, by: daemonUser) == nil)
                #expect(policy.check(request, by: root) == nil)
            }
        }

        @Test func othersMayCallSubscribeAndPublish() {
            #expect(policy.check(.call(target: "Notes", action: "add"), by: alice) == nil)
            #expect(policy.check(.subscribe(pattern: "*"), by: alice) == nil)
            #expect(policy.check(.subscribe(pattern: "mediator.*"), by: alice) == nil)
            #expect(policy.check(.publish(event: "user.login"), by: bob) == nil)
        }

        /// Whoever may call may pass descriptors with the call, local or
        /// remote (a memfd the bridge turned into bytes and back).
        @Test func othersMaySendDescriptorsWithTheirCalls() {
            #expect(policy.check(.sendDescriptors(target: "Notes"), by: alice) == nil)
            #expect(policy.check(.sendDescriptors(target: "Notes"), by: daemonUser) == nil)
            #expect(policy.check(.sendDescriptors(target: "Notes"), by: .remote(host: "far", uid: 1000)) == nil)
        }

        @Test func othersMayNotRegisterOrMonitor() {
            #expect(policy.check(.register(target: "Notes"), by: alice) == #"uid 1000 (alice) may not register "Notes""#)
            #expect(policy.check(.monitor, by: bob) == "uid 1001 may not monitor")
        }

        /// Issue 10: stopping someone else's service is an administrator's
        /// right; by default only root and the daemon's own user may.
        @Test func othersMayNotStartOrStopManagedComponents() {
            for action in ["start", "stop"] {
                #expect(policy.check(.call(target: "mediator", action: action), by: alice) == #"uid 1000 (alice) may not call "mediator/\#(action)""#)
                #expect(policy.check(.call(target: "mediator", action: action), by: daemonUser) == nil)
                #expect(policy.check(.call(target: "mediator", action: action), by: root) == nil)
            }
            // The daemon's other actions stay open to everyone.
            #expect(policy.check(.call(target: "mediator", action: "ping"), by: alice) == nil)
        }

        @Test func onlyAGrantNamingTheDaemonCoversStartAndStop() throws {
            let everything = try readPolicy(#"{"rules": [{"match": {"user": "alice"}, "allow": {"call": ["*/*", "*/stop"]}}]}"#)
            #expect(everything.check(.call(target: "mediator", action: "stop"), by: alice) != nil)
            #expect(everything.check(.call(target: "Notes", action: "stop"), by: alice) == nil)
            let named = try readPolicy(#"{"rules": [{"match": {"user": "alice"}, "allow": {"call": ["mediator/stop"]}}]}"#)
            #expect(named.check(.call(target: "mediator", action: "stop"), by: alice) == nil)
            #expect(named.check(.call(target: "mediator", action: "start"), by: alice) != nil)
            let all = try readPolicy(#"{"rules": [{"match": {"user": "alice"}, "allow": {"call": ["mediator/*"]}}]}"#)
            #expect(all.check(.call(target: "mediator", action: "start"), by: alice) == nil)
        }

        @Test func underRootTheDefaultIsRootOnly() {
            let asRoot = Policy.defaultPolicy(daemonUID: 0)
            #expect(asRoot.check(.register(target: "Notes"), by: alice) != nil)
            #expect(asRoot.check(.call(target: "Notes", action: "add"), by: alice) == nil)
        }

        @Test func mergingKeepsRulesInOrder() throws {
            let first = try readPolicy(#"{"rules": [{"match": {"user": "alice"}, "allow": {"monitor": true}}]}"#)
            let second = try readPolicy(#"{"rules": [{"match": {}, "allow": {"call": ["*/ping"]}}]}"#)
            let merged = Policy.merged([first, second])
            #expect(merged.rules == first.rules + second.rules)
            #expect(!merged.isDefault)
            #expect(Policy.merged([]).rules.isEmpty)
            #expect(!Policy.merged([]).isDefault)
            #expect(Policy.merged([policy]).isDefault)
            #expect(!Policy.merged([policy, first]).isDefault)
        }
    }
}

// MARK: - Malformed files

struct BadPolicyCase: Sendable, CustomTestStringConvertible {
    var json: String
    var member: String?
    var reason: String
    var testDescription: String { json }
}

private let badCases: [BadPolicyCase] = [
    BadPolicyCase(json: "[]", member: nil, reason: "a policy must be a JSON object, got array"),
    BadPolicyCase(json: "{}", member: "rules", reason: "is required"),
    BadPolicyCase(json: #"{"rules": {}}"#, member: "rules", reason: "must be an array of rules, got {}"),
    BadPolicyCase(
        json: #"{"rules": [], "rule": []}"#, member: "rule", reason: "unknown member; known members: rules, description"),
    BadPolicyCase(json: #"{"rules": [], "description": 3}"#, member: "description", reason: "must be a string, got 3"),
    BadPolicyCase(json: #"{"rules": [7]}"#, member: "rules[0]", reason: "must be an object, got 7"),
    BadPolicyCase(
        json: #"{"rules": [{"allow": {}}]}"#, member: "rules[0].match", reason: "is required; {} matches everyone"),
    BadPolicyCase(json: #"{"rules": [{"match": {}}]}"#, member: "rules[0].allow", reason: "is required"),
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": {}, "deny": {}}]}"#, member: "rules[0].deny",
        reason: "unknown member; known members: match, allow, description"),
    BadPolicyCase(
        json: #"{"rules": [{"match": "alice", "allow": {}}]}"#, member: "rules[0].match",
        reason: #"must be an object ({} matches everyone), got "alice""#),
    BadPolicyCase(
        json: #"{"rules": [{"match": {"username": "alice"}, "allow": {}}]}"#, member: "rules[0].match.username",
        reason: "unknown member; known members: user, group, uid, gid, remote, host"),
    BadPolicyCase(
        json: #"{"rules": [{"match": {"user": ""}, "allow": {}}]}"#, member: "rules[0].match.user",
        reason: #"must be a non-empty user name, got """#),
    BadPolicyCase(
        json: #"{"rules": [{"match": {"group": 50}, "allow": {}}]}"#, member: "rules[0].match.group",
        reason: "must be a non-empty group name, got 50"),
    BadPolicyCase(
        json: #"{"rules": [{"match": {"uid": -1}, "allow": {}}]}"#, member: "rules[0].match.uid",
        reason: "must be an integer from 0 to 4294967294, got -1"),
    BadPolicyCase(
        json: #"{"rules": [{"match": {"gid": 4294967295}, "allow": {}}]}"#, member: "rules[0].match.gid",
        reason: "must be an integer from 0 to 4294967294, got 4294967295"),
    BadPolicyCase(
        json: #"{"rules": [{"match": {"uid": "1000"}, "allow": {}}]}"#, member: "rules[0].match.uid",
        reason: #"must be an integer from 0 to 4294967294, got "1000""#),
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": []}]}"#, member: "rules[0].allow", reason: "must be an object, got []"),
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": {"own": ["Notes"]}}]}"#, member: "rules[0].allow.own",
        reason: "unknown member; known members: register, call, subscribe, publish, monitor, send_fds"),
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": {"register": "Notes"}}]}"#, member: "rules[0].allow.register",
        reason: #"must be an array of patterns, got "Notes""#),
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": {"register": ["Notes", 3]}}]}"#, member: "rules[0].allow.register[1]",
        reason: "must be a string, got 3"),
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": {"register": ["Net*"]}}]}"#, member: "rules[0].allow.register[0]",
        reason: #""Net*" is not a target pattern: expected a name, NAME.* or *"#),
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": {"call": ["Notes"]}}]}"#, member: "rules[0].allow.call[0]",
        reason: #""Notes" is not a call pattern: expected TARGET/ACTION, each side a name, NAME.* or * (such as "Notes/*")"#),
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": {"subscribe": ["user*"]}}]}"#, member: "rules[0].allow.subscribe[0]",
        reason: #""user*" is not an event pattern: expected a name, NAME.* or *"#),
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": {"publish": ["*.login"]}}]}"#, member: "rules[0].allow.publish[0]",
        reason: #""*.login" is not an event pattern: expected a name, NAME.* or *"#),
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": {"send_fds": true}}]}"#, member: "rules[0].allow.send_fds",
        reason: "must be an array of patterns, got true"),
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": {"send_fds": ["Notes/*"]}}]}"#, member: "rules[0].allow.send_fds[0]",
        reason: #""Notes/*" is not a target pattern: expected a name, NAME.* or *"#),
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": {"monitor": "yes"}}]}"#, member: "rules[0].allow.monitor",
        reason: #"must be true or false, got "yes""#),
    // A bad later rule refuses the whole file, good rules before it included.
    BadPolicyCase(
        json: #"{"rules": [{"match": {}, "allow": {"call": ["*/*"]}}, {"match": {}, "allow": {"monitor": 1}}]}"#,
        member: "rules[1].allow.monitor", reason: "must be true or false, got 1"),
]

extension PolicyTests {
    @Suite("Malformed files")
    struct MalformedFiles {
        @Test(arguments: badCases)
        func refused(_ testCase: BadPolicyCase) throws {
            let json = try JSONParser.parse(testCase.json)
            #expect(throws: PolicyProblem(file: policyFile, member: testCase.member, reason: testCase.reason)) {
                try Policy(json: json, file: policyFile, accounts: accounts)
            }
        }

        @Test func descriptionsAreAllowed() throws {
            let loaded = try readPolicy(#"{"description": "site policy", "rules": [{"description": "all", "match": {}, "allow": {}}]}"#)
            #expect(loaded.rules.count == 1)
        }

        @Test func unknownNamesSkipTheRuleOnly() throws {
            let loaded = try readPolicy(
                #"""
                {"rules": [{"match": {"user": "mallory"}, "allow": {"monitor": true}},
                           {"match": {"group": "nogroup"}, "allow": {"monitor": true}},
                           {"match": {"user": "alice", "uid": 1001}, "allow": {"monitor": true}},
                           {"match": {"user": "bob"}, "allow": {"monitor": true}}]}
                """#)
            #expect(loaded.rules == [Policy.Rule(match: Policy.Match(uid: 1001), allow: Policy.Allow(monitor: true))])
            #expect(
                loaded.skippedRules == [
                    PolicyProblem(file: policyFile, member: "rules[0].match.user",
                        reason: #"no user named "mallory"; the rule is skipped"#),
                    PolicyProblem(file: policyFile, member: "rules[1].match.group",
                        reason: #"no group named "nogroup"; the rule is skipped"#),
                    PolicyProblem(
                        file: policyFile, member: "rules[2].match.user",
                        reason: #"user "alice" is uid 1000, not 1001 as "uid" says; the rule is skipped"#),
                ])
            #expect(loaded.check(.monitor, by: bob) == nil)
            #expect(loaded.check(.monitor, by: alice) == "uid 1000 (alice) may not monitor")
        }

        @Test func problemDescriptions() {
            #expect(
                PolicyProblem(file: "/p/a.json", member: "rules[0].match.user", reason: "no user").description
                    == #"/p/a.json: member "rules[0].match.user": no user"#)
            #expect(PolicyProblem(file: "/p/a.json", reason: "is not valid JSON").description == "/p/a.json: is not valid JSON")
        }
    }
}

// MARK: - Loading folders

extension PolicyTests {
    @Suite("PolicyLoader")
    struct Loader {
        /// Writes a policy file with mode 0644 whatever the umask.
    private func write(_ text: String, _ path: String) {
        ManifestScratchFolder.write(text, to: path)
        chmod(path, 0o644)
    }

    @Test func filesOthersCouldChangeAreRefused() {
        let temp = ManifestScratchFolder()
        let dir = temp.folder("policy.d")
        write(#"{"rules": [{"match": {}, "allow": {"monitor": true}}]}"#, dir + "/group-writable.json")
        chmod(dir + "/group-writable.json", 0o664)
        write(#"{"rules": [{"match": {}, "allow": {"monitor": true}}]}"#, dir + "/world-writable.json")
        chmod(dir + "/world-writable.json", 0o606)
        write(#"{"rules": [{"match": {}, "allow": {"call": ["*/*"]}}]}"#, dir + "/ok.json")
        chmod(dir + "/ok.json", 0o600)
        let (policy, problems) = PolicyLoader(directories: [dir], accounts: accounts, daemonUID: 980).load()
        #expect(policy.rules == [Policy.Rule(allow: Policy.Allow(call: [.any]))])
        #expect(
            problems == [
                PolicyProblem(
                    file: dir + "/group-writable.json",
                    reason: "is writable by its group or others (mode 0664), so it is not read; chmod go-w it"),
                PolicyProblem(
                    file: dir + "/world-writable.json",
                    reason: "is writable by its group or others (mode 0606), so it is not read; chmod go-w it"),
            ])
    }

    @Test(.enabled(if: getuid() == 0, "only root can give a file away"))
    func filesOfAnotherOwnerAreRefused() {
        let temp = ManifestScratchFolder()
        let dir = temp.folder("policy.d")
        write(#"{"rules": [{"match": {}, "allow": {"monitor": true}}]}"#, dir + "/theirs.json")
        #expect(chown(dir + "/theirs.json", 4321, 0) == 0)
        let (policy, problems) = PolicyLoader(directories: [dir], accounts: accounts, daemonUID: 980).load()
        #expect(policy == Policy(rules: []))
        #expect(
            problems == [
                PolicyProblem(
                    file: dir + "/theirs.json",
                    reason: "is owned by uid 4321; a policy file must belong to root or to the daemon's user (uid 0), so it is not read")
            ])
    }

        @Test func goodFilesLoadBesideBadOnes() {
            let temp = ManifestScratchFolder()
            let dir = temp.folder("policy.d")
            write(#"{"rules": [{"match": {"user": "alice"}, "allow": {"register": ["Notes"]}}]}"#, dir + "/10-alice.json")
            write(#"{"rules": [{"match": {}, "allow": {"monitor": true}},]}"#, dir + "/20-broken.json")
            write(#"{"rules": [{"match": {}, "allow": {"register": ["Net*"]}}]}"#, dir + "/30-pattern.json")
            write(
                #"""
                {"rules": [{"match": {"user": "ghost"}, "allow": {"monitor": true}},
                           {"match": {"group": "staff"}, "allow": {"call": ["*/*"]}}]}
                """#, dir + "/40-staff.json")
            write("{}", dir + "/README.txt")
            write(#"{"rules": [{"match": {}, "allow": {"monitor": true}}]}"#, dir + "/.hidden.json")
            write(#"{"rules": [{"match": {}, "allow": {"monitor": true}}]}"#, dir + "/50.json.bak")
            _ = temp.folder("policy.d/folder.json")

            let (policy, problems) = PolicyLoader(directories: [dir], accounts: accounts, daemonUID: 980).load()
            #expect(!policy.isDefault)
            #expect(
                policy.rules == [
                    Policy.Rule(match: Policy.Match(uid: 1000), allow: Policy.Allow(register: [.exact("Notes")])),
                    Policy.Rule(match: Policy.Match(gids: [50]), allow: Policy.Allow(call: [.any])),
                ])
            #expect(problems.count == 3)
            guard problems.count == 3 else { return }
            #expect(problems[0].file == dir + "/20-broken.json")
            #expect(problems[0].member == nil)
            #expect(problems[0].reason.hasPrefix("is not valid JSON"))
            #expect(
                problems[1]
                    == PolicyProblem(
                        file: dir + "/30-pattern.json", member: "rules[0].allow.register[0]",
                        reason: #""Net*" is not a target pattern: expected a name, NAME.* or *"#))
            #expect(
                problems[2]
                    == PolicyProblem(
                        file: dir + "/40-staff.json", member: "rules[0].match.user", reason: #"no user named "ghost"; the rule is skipped"#))
            #expect(policy.skippedRules == [problems[2]])

            #expect(policy.check(.register(target: "Notes"), by: alice) == nil)
            #expect(policy.check(.call(target: "X", action: "y"), by: bob) == nil)
            #expect(policy.check(.monitor, by: bob) == "uid 1001 may not monitor")
            // The default is gone: the daemon's user gets only what files grant.
            #expect(policy.check(.register(target: "Notes"), by: daemonUser) == #"uid 980 (mediator) may not register "Notes""#)
        }

        @Test func noFilesMeansTheDefault() {
            let temp = ManifestScratchFolder()
            let empty = temp.folder("empty")
            write("{}", empty + "/notes.txt")
            for directories in [[], [temp.path + "/missing"], [empty], [empty, temp.path + "/missing"]] {
                let (policy, problems) = PolicyLoader(directories: directories, accounts: accounts, daemonUID: 980).load()
                #expect(policy == Policy.defaultPolicy(daemonUID: 980), "\(directories)")
                #expect(problems.isEmpty)
            }
        }

        @Test func theDefaultTrustsTheDaemonsOwnUIDUnlessTold() {
            let (policy, _) = PolicyLoader(directories: [], accounts: accounts).load()
            #expect(policy == Policy.defaultPolicy(daemonUID: UInt32(getuid())))
        }

        @Test func brokenFilesStillEndTheDefault() {
            let temp = ManifestScratchFolder()
            let dir = temp.folder("policy.d")
            write("{ broken", dir + "/a.json")
            let (policy, problems) = PolicyLoader(directories: [dir], accounts: accounts, daemonUID: 980).load()
            #expect(policy == Policy(rules: []))
            #expect(problems.count == 1)
            #expect(policy.check(.call(target: "Notes", action: "add"), by: alice) != nil)
            #expect(policy.check(.call(target: "Notes", action: "add"), by: root) == nil)
        }

        @Test func anEmptyFileIsAPolicyWithNoRules() {
            let temp = ManifestScratchFolder()
            let dir = temp.folder("policy.d")
            write("", dir + "/lockdown.json")
            let (policy, problems) = PolicyLoader(directories: [dir], accounts: accounts, daemonUID: 980).load()
            #expect(policy == Policy(rules: []))
            #expect(problems.isEmpty)
        }

        @Test func aFileWhereAFolderShouldBeEndsTheDefault() {
            let temp = ManifestScratchFolder()
            let path = temp.path + "/policy.json"
            write(#"{"rules": []}"#, path)
            let (policy, problems) = PolicyLoader(directories: [path], accounts: accounts, daemonUID: 980).load()
            #expect(!policy.isDefault)
            #expect(problems == [PolicyProblem(file: path, reason: "is not a folder; no rules are read from it")])
        }

        @Test func filesAreReadInByteOrderAndTheFirstFolderWins() {
            let temp = ManifestScratchFolder()
            let etc = temp.folder("etc")
            let lib = temp.folder("lib")
            let rule = { (user: String) in #"{"rules": [{"match": {"user": "\#(user)"}, "allow": {"monitor": true}}]}"# }
            write(rule("bob"), lib + "/b.json")
            write(rule("alice"), etc + "/b.json")  // shadows lib/b.json
            write(rule("carol"), lib + "/A.json")
            write(rule("notes"), etc + "/a.json")
            let (policy, problems) = PolicyLoader(directories: [etc, lib], accounts: accounts, daemonUID: 980).load()
            #expect(problems.isEmpty)
            #expect(policy.rules.map(\.match.uid) == [990, 1000, 1002])
        }

        @Test func brokenLinksAreProblems() {
            let temp = ManifestScratchFolder()
            let dir = temp.folder("policy.d")
            #expect(symlink(temp.path + "/nowhere.json", dir + "/gone.json") == 0)
            let (policy, problems) = PolicyLoader(directories: [dir], accounts: accounts, daemonUID: 980).load()
            #expect(!policy.isDefault)
            #expect(problems == [PolicyProblem(file: dir + "/gone.json", reason: "is a link to a file that does not exist")])
        }

        @Test func defaultDirectories() {
            #expect(PolicyLoader.defaultDirectories(userInstance: false, environment: [:]) == ["/etc/mediator/policy.d"])
            #expect(
                PolicyLoader.defaultDirectories(userInstance: true, environment: ["XDG_CONFIG_HOME": "/x/cfg", "HOME": "/home/a"])
                    == ["/x/cfg/mediator/policy.d"])
            #expect(
                PolicyLoader.defaultDirectories(userInstance: true, environment: ["XDG_CONFIG_HOME": "rel", "HOME": "/home/a"])
                    == ["/home/a/.config/mediator/policy.d"])
        }
    }
}

// MARK: - The system's accounts

extension PolicyTests {
    @Suite("SystemAccounts")
    struct Accounts {
        @Test func rootIsZero() {
            let system = SystemAccounts()
            #expect(system.uid(ofUser: "root") == 0)
            #expect(system.gid(ofGroup: "root") == 0)
            #expect(system.userName(0) == "root")
        }

        @Test func unknownNamesAreNil() {
            let system = SystemAccounts()
            #expect(system.uid(ofUser: "no-such-user-mediator-test") == nil)
            #expect(system.gid(ofGroup: "no-such-group-mediator-test") == nil)
            #expect(system.uid(ofUser: "") == nil)
            #expect(system.uid(ofUser: "ro\0ot") == nil)
        }

        @Test func theCurrentUserRoundTrips() {
            let system = SystemAccounts()
            let me = UInt32(getuid())
            if let name = system.userName(me) {
                #expect(system.uid(ofUser: name) == me)
            }
        }
    }
}

// MARK: - Remote callers (the NATS bridge)

extension PolicyTests {
    @Suite("Remote callers")
    struct Remote {
        let fromA = PolicySubject.remote(host: "hostA", uid: 1000)
        let fromB = PolicySubject.remote(host: "hostB", uid: 0)

        @Test func onlyRulesAboutRemoteCallersMatchThem() throws {
            let policy = try readPolicy(#"""
                {"rules": [
                  {"match": {}, "allow": {"call": ["*/*"]}},
                  {"match": {"uid": 1000}, "allow": {"call": ["Alice/*"]}},
                  {"match": {"host": "hostA"}, "allow": {"call": ["Notes/*"]}},
                  {"match": {"remote": true}, "allow": {"call": ["Weather/echo"]}}
                ]}
                """#)
            // Everyone's rule and uid 1000's are about local callers.
            #expect(!policy.allows(.call(target: "Alice", action: "x"), by: fromA))
            #expect(!policy.allows(.call(target: "Other", action: "x"), by: fromA))
            #expect(policy.allows(.call(target: "Notes", action: "add"), by: fromA))
            #expect(!policy.allows(.call(target: "Notes", action: "add"), by: fromB))
            #expect(policy.allows(.call(target: "Weather", action: "echo"), by: fromB))
            // A remote uid 0 is information only: not root here.
            #expect(!policy.allows(.call(target: "Other", action: "x"), by: fromB))
            // Remote rules are not about local callers.
            let local = PolicySubject(uid: 1002, gid: 1002, groups: [])
            #expect(policy.allows(.call(target: "Other", action: "x"), by: local))
            #expect(policy.check(.call(target: "Other", action: "x"), by: fromA) == #"uid 1000 on host "hostA" may not call "Other/x""#)
        }

        @Test func theDefaultPolicyLetsRemoteCallersCallOnly() {
            let policy = Policy.defaultPolicy(daemonUID: 980)
            #expect(policy.allows(.call(target: "Notes", action: "add"), by: fromA))
            #expect(!policy.allows(.register(target: "Notes"), by: fromA))
            #expect(!policy.allows(.publish(event: "user.x"), by: fromA))
        }

        @Test(arguments: [
            #"{"rules": [{"match": {"host": "hostA", "uid": 1}, "allow": {}}]}"#,
            #"{"rules": [{"match": {"remote": true, "user": "alice"}, "allow": {}}]}"#,
            #"{"rules": [{"match": {"remote": "yes"}, "allow": {}}]}"#,
            #"{"rules": [{"match": {"host": ""}, "allow": {}}]}"#,
            #"{"rules": [{"match": {"host": "h", "remote": false}, "allow": {}}]}"#,
        ])
        func badRemoteMatchesAreRefused(json: String) {
            #expect(throws: (any Error).self) { _ = try readPolicy(json) }
        }
    }
}
