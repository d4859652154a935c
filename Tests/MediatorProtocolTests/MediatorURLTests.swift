import Testing

@testable import MediatorProtocol

@Suite struct MediatorURLTests {
    struct Good: Sendable, CustomTestStringConvertible {
        let text: String
        let scheme: String
        let target: String
        let action: String
        let params: [String: String]
        var testDescription: String { text }
    }

    static let good: [Good] = [
        Good(text: "app://Detail/show", scheme: "app", target: "Detail", action: "show", params: [:]),
        Good(text: "app://Detail/show?", scheme: "app", target: "Detail", action: "show", params: [:]),
        Good(text: "app://Detail/show/", scheme: "app", target: "Detail", action: "show", params: [:]),
        Good(text: "app://Detail/show/?a=1", scheme: "app", target: "Detail", action: "show", params: ["a": "1"]),
        Good(
            text: "APP+x.y-z://Detail/show", scheme: "app+x.y-z", target: "Detail", action: "show", params: [:]),
        Good(
            text: "app://Detail/show?title=Hi&n=2", scheme: "app", target: "Detail", action: "show",
            params: ["title": "Hi", "n": "2"]),
        Good(
            text: "app://Detail/show?title=Hello%20World", scheme: "app", target: "Detail", action: "show",
            params: ["title": "Hello World"]),
        Good(text: "app://D/a?q=a+b", scheme: "app", target: "D", action: "a", params: ["q": "a+b"]),
        Good(text: "app://D/a?q=a%2Bb", scheme: "app", target: "D", action: "a", params: ["q": "a+b"]),
        Good(text: "app://D/a?q=%2b%2B", scheme: "app", target: "D", action: "a", params: ["q": "++"]),
        Good(text: "app://D/a?k=1&k=2&k=3", scheme: "app", target: "D", action: "a", params: ["k": "3"]),
        Good(text: "app://D/a?flag", scheme: "app", target: "D", action: "a", params: ["flag": ""]),
        Good(text: "app://D/a?flag=", scheme: "app", target: "D", action: "a", params: ["flag": ""]),
        Good(text: "app://D/a?a=1&&b=2&", scheme: "app", target: "D", action: "a", params: ["a": "1", "b": "2"]),
        Good(text: "app://D/a?e=x=y", scheme: "app", target: "D", action: "a", params: ["e": "x=y"]),
        Good(text: "app://D/a?p=/x/y?z", scheme: "app", target: "D", action: "a", params: ["p": "/x/y?z"]),
        Good(
            text: "app://D/a?%6Bey%20x=v%26w", scheme: "app", target: "D", action: "a", params: ["key x": "v&w"]),
        Good(text: "app://D/a?h=%23tag", scheme: "app", target: "D", action: "a", params: ["h": "#tag"]),
        Good(text: "app://D/a?u=%C3%A9t%C3%A9", scheme: "app", target: "D", action: "a", params: ["u": "été"]),
        Good(text: "app://D/a?u=%F0%9F%98%80", scheme: "app", target: "D", action: "a", params: ["u": "😀"]),
        Good(text: "app://D/a?u=été", scheme: "app", target: "D", action: "a", params: ["u": "été"]),
        Good(text: "app://D/a?%C3%A9=1", scheme: "app", target: "D", action: "a", params: ["é": "1"]),
        Good(text: "app://D/_hidden", scheme: "app", target: "D", action: "_hidden", params: [:]),
        Good(
            text: "x://app.detail-view_2/native.open", scheme: "x", target: "app.detail-view_2",
            action: "native.open", params: [:]),
    ]

    @Test(arguments: good)
    func parses(_ example: Good) throws {
        let url = try MediatorURL(parsing: example.text)
        #expect(url.scheme == example.scheme)
        #expect(url.target == example.target)
        #expect(url.action == example.action)
        #expect(url.params == example.params)
        #expect(url.paramsJSON == .object(example.params.mapValues { .string($0) }))
    }

    static let bad: [(String, String)] = [
        ("", "no scheme"),
        ("Detail/show", "no scheme"),
        ("://Detail/show", "no scheme"),
        ("1app://Detail/show", "invalid URL scheme"),
        ("a_b://Detail/show", "invalid URL scheme"),
        ("app:Detail/show", "SCHEME://TARGET/ACTION"),
        ("app:/Detail/show", "SCHEME://TARGET/ACTION"),
        ("app://", "no target"),
        ("app:///show", "no target"),
        ("app://Detail", "no action"),
        ("app://Detail?x=1", "no action"),
        ("app://Detail/", "no action"),
        ("app://Detail/?x=1", "no action"),
        ("app://Detail/show/extra", "single segment"),
        ("app://Detail/show//", "single segment"),
        ("app://Detail//show", "no action"),
        ("app://1Detail/show", "invalid target name"),
        ("app://user@Detail/show", "invalid target name"),
        ("app://Detail:80/show", "invalid target name"),
        ("app://De%74ail/show", "invalid target name"),
        ("app://Détail/show", "invalid target name"),
        ("app://Detail/sh%6Fw", "invalid action name"),
        ("app://Detail/9show", "invalid action name"),
        ("app://Detail/show#frag", "fragment"),
        ("app://Detail/show?a=1#frag", "fragment"),
        ("app://Detail/show?a=1 2", "spaces or control"),
        ("app://Detail/show?a=1\n", "spaces or control"),
        ("app://Detail/show?a=%", "invalid percent escape"),
        ("app://Detail/show?a=%4", "invalid percent escape"),
        ("app://Detail/show?a=%G1", "invalid percent escape"),
        ("app://Detail/show?a=%1G", "invalid percent escape"),
        ("app://Detail/show?%=1", "invalid percent escape"),
        ("app://Detail/show?a=%FF", "not valid UTF-8"),
        ("app://Detail/show?a=%C3", "not valid UTF-8"),
        ("app://Detail/show?a=%C3%28", "not valid UTF-8"),
        ("app://Detail/show?a=%ED%A0%80", "not valid UTF-8"),  // a UTF-16 surrogate
        ("app://Detail/show?=1", "empty key"),
        ("app://\(String(repeating: "a", count: 129))/show", "invalid target name"),
        ("app://D/\(String(repeating: "a", count: 129))", "invalid action name"),
    ]

    @Test(arguments: bad)
    func rejects(text: String, reason: String) {
        #expect {
            try MediatorURL(parsing: text)
        } throws: { error in
            guard let error = error as? MediatorError else { return false }
            return error.code == .badRequest && error.message.contains(reason)
        }
    }

    @Test func nameBoundaryIsAccepted() throws {
        let target = String(repeating: "T", count: 128)
        let action = String(repeating: "a", count: 128)
        let url = try MediatorURL(parsing: "app://\(target)/\(action)")
        #expect(url.target == target)
        #expect(url.action == action)
    }

    @Test func typedThrowIsMediatorError() {
        do {
            _ = try MediatorURL(parsing: "app://Detail")
            Issue.record("expected an error")
        } catch {
            // `error` is statically a MediatorError thanks to typed throws.
            #expect(error.code == .badRequest)
            #expect(!error.message.isEmpty)
        }
    }

    @Test func memberwiseInitAndEquality() throws {
        let parsed = try MediatorURL(parsing: "app://D/a?x=1")
        #expect(parsed == MediatorURL(scheme: "app", target: "D", action: "a", params: ["x": "1"]))
        #expect(parsed != MediatorURL(scheme: "app", target: "D", action: "a", params: ["x": "2"]))
    }
}
