import MediatorProtocol
import Testing

@testable import mediatorctl

/// The key=value rules of `call`, `stream` and `emit`.
@Suite struct ParamsParserTests {
    @Test("No words: an empty object")
    func noWords() throws {
        #expect(try ParamsParser.params([]) == .object([:]))
    }

    @Test("A single JSON object word, as is (leading whitespace allowed)")
    func jsonObject() throws {
        #expect(try ParamsParser.params([#"{"city": "Oslo", "days": 3}"#]) == ["city": "Oslo", "days": 3])
        #expect(try ParamsParser.params([" \n{\"a\": [1, null]}"]) == ["a": [1, .null]])
    }

    @Test("A word that starts like an object but is not JSON is refused; other JSON is not params")
    func badJSON() {
        #expect(throws: ParamsParser.Failure.self) { try ParamsParser.params(["{not json"]) }
        #expect(throws: ParamsParser.Failure(#"expected key=value or a JSON object, got "[1]""#)) {
            try ParamsParser.params(["[1]"])
        }
        #expect(throws: ParamsParser.Failure.self) { try ParamsParser.json("[1") }
    }

    @Test("key=value: JSON when it parses, else the string")
    func keyValue() throws {
        let params = try ParamsParser.params([
            "n=5", "ok=true", "name=bob", #"s="5""#, "list=[1,2]", "empty=", "f=1.5", "nothing=null",
            "eq=a=b", #"obj={"k": 1}"#, "space=two words",
        ])
        #expect(params == [
            "n": 5, "ok": true, "name": "bob", "s": "5", "list": [1, 2], "empty": "", "f": 1.5, "nothing": .null,
            "eq": "a=b", "obj": ["k": 1], "space": "two words",
        ])
    }

    @Test("A repeated key: the last one wins")
    func repeatedKey() throws {
        #expect(try ParamsParser.params(["a=1", "a=2"]) == ["a": 2])
    }

    @Test("A word without = or with an empty key is refused")
    func badPairs() {
        #expect(throws: ParamsParser.Failure(#"expected key=value or a JSON object, got "novalue""#)) {
            try ParamsParser.params(["novalue"])
        }
        #expect(throws: ParamsParser.Failure(#"empty key in "=5""#)) { try ParamsParser.params(["=5"]) }
        #expect(throws: ParamsParser.Failure.self) { try ParamsParser.params(["a=1", #"{"b": 2}"#]) }
    }

    @Test("Event data: any JSON value, else key=value words, nil without words")
    func eventData() throws {
        #expect(try ParamsParser.data([]) == nil)
        #expect(try ParamsParser.data(["5"]) == 5)
        #expect(try ParamsParser.data([#""text""#]) == "text")
        #expect(try ParamsParser.data([#"{"user": "ann"}"#]) == ["user": "ann"])
        #expect(try ParamsParser.data(["[1, 2]"]) == [1, 2])
        #expect(try ParamsParser.data(["user=ann", "n=1"]) == ["user": "ann", "n": 1])
        #expect(try ParamsParser.data(["user=ann"]) == ["user": "ann"])
        #expect(throws: ParamsParser.Failure.self) { try ParamsParser.data(["plain"]) }
    }

    @Test func value() {
        #expect(ParamsParser.value("") == "")
        #expect(ParamsParser.value("-3") == -3)
        #expect(ParamsParser.value("abc") == "abc")
        #expect(ParamsParser.value("false") == false)
    }
}
