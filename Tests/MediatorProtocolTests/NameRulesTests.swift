import Testing

@testable import MediatorProtocol

@Suite struct NameRulesTests {
    static let letters128 = String(repeating: "a", count: 128)
    static let letters129 = String(repeating: "a", count: 129)
    /// 126 ASCII bytes and one two-byte character: 128 bytes, 127 characters.
    static let twoByteAt128 = String(repeating: "a", count: 126) + "é"

    static let targets: [(String, Bool)] = [
        ("Detail", true),
        ("a", true),
        ("Z", true),
        ("app.detail-view_2", true),
        ("a..b", true),
        ("a-", true),
        ("mediator", true),
        (letters128, true),
        ("A" + String(repeating: "9", count: 127), true),
        (letters129, false),
        ("", false),
        ("_private", false),
        ("1abc", false),
        ("-abc", false),
        (".abc", false),
        ("a b", false),
        ("a/b", false),
        ("a*", false),
        ("a:b", false),
        ("é", false),
        ("aé", false),
        (twoByteAt128, false),
        ("a\u{0}", false),
        ("@", false),
        ("[", false),
        ("`", false),
        ("{", false),
    ]

    @Test(arguments: targets)
    func target(name: String, valid: Bool) {
        #expect(NameRules.isValidTarget(name) == valid)
        #expect(NameRules.isValidEvent(name) == valid)
    }

    static let actions: [(String, Bool)] = [
        ("show", true),
        ("_private", true),
        ("_", true),
        ("notFound", true),
        ("native.open-file_2", true),
        (letters128, true),
        ("_" + String(repeating: "x", count: 127), true),
        ("_" + String(repeating: "x", count: 128), false),
        (letters129, false),
        ("", false),
        ("9lives", false),
        ("-x", false),
        (".x", false),
        ("show me", false),
        ("show?", false),
        ("shöw", false),
    ]

    @Test(arguments: actions)
    func action(name: String, valid: Bool) {
        #expect(NameRules.isValidAction(name) == valid)
    }

    @Test(arguments: [
        ("mediator.registered", true),
        ("mediator.", true),
        ("mediator", false),
        ("mediatorx.y", false),
        ("Mediator.registered", false),
        ("user.login", false),
    ])
    func reservedEvent(name: String, reserved: Bool) {
        #expect(NameRules.isReservedEvent(name) == reserved)
    }

    @Test(arguments: [
        ("*", true),
        ("user.*", true),
        ("user.login", true),
        ("a.b.*", true),
        ("mediator.*", true),
        ("user", true),
        (String(repeating: "a", count: 127) + ".*", true),  // the prefix `a…a.` is 128 bytes
        (String(repeating: "a", count: 128) + ".*", false),
        ("", false),
        ("**", false),
        (".*", false),
        ("user*", false),
        ("user.**", false),
        ("*.login", false),
        ("user.*.x", false),
        ("u*er", false),
        ("1user.*", false),
        ("user. *", false),
    ])
    func pattern(pattern: String, valid: Bool) {
        #expect(NameRules.isValidEventPattern(pattern) == valid)
    }

    @Test(arguments: [
        ("*", "user.login", true),
        ("*", "mediator.registered", true),
        ("*", "x", true),
        ("user.*", "user.login", true),
        ("user.*", "user.a.b", true),
        ("user.*", "user.", false),
        ("user.*", "user", false),
        ("user.*", "users.x", false),
        ("user.*", "use", false),
        ("user.*", "xuser.login", false),
        ("user.*", "User.login", false),
        ("user.login", "user.login", true),
        ("user.login", "user.logins", false),
        ("user.login", "user.log", false),
        ("user.login", "user", false),
        ("a.b.*", "a.b.c", true),
        ("a.b.*", "a.bc", false),
        ("mediator.*", "mediator.cancel", true),
    ])
    func matches(pattern: String, event: String, expected: Bool) {
        #expect(NameRules.eventPattern(pattern, matches: event) == expected)
    }

    @Test func boundaryFixturesHaveTheIntendedSizes() {
        #expect(Self.letters128.utf8.count == 128)
        #expect(Self.letters129.utf8.count == 129)
        #expect(Self.twoByteAt128.utf8.count == 128)
        #expect(NameRules.maxNameBytes == 128)
    }
}
