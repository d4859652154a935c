import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// Results checked against the action's `result` schema (issue 11), and
/// `$defs`/`$ref` in the schemas a component registers.
@Suite("Broker: result checking")
struct BrokerResultCheckTests {
    static let noteDefinitions = #""$defs":{"Note":{"type":"object","title":"Note","required":["id","text"],"properties":{"id":{"type":"integer"},"text":{"type":"string"}}}}"#

    /// `list` checks its results, `watch` streams checked partials, `free`
    /// declares params but no result, `add` takes a `$ref` in its params.
    static let actions = """
        [{"name":"list","result":{"type":"object","required":["notes"],"properties":{"notes":{"type":"array","items":{"$ref":"#/$defs/Note"}}},\(noteDefinitions)}},
         {"name":"watch","more":true,"result":{"$defs":{"N":{"type":"integer"}},"type":"object","required":["n"],"properties":{"n":{"$ref":"#/$defs/N"}}}},
         {"name":"free","params":{"type":"object"}},
         {"name":"add","params":{"type":"object","required":["note"],"properties":{"note":{"$ref":"#/$defs/Note"}},\(noteDefinitions)}}]
        """

    /// Caller 1, component 2 serving Notes.
    func setUp() -> BrokerDriver {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("Notes", actions: Self.actions, from: 2)
        return d
    }

    static func invalidResult(id: String, _ message: String, action: String) -> JSONValue {
        .object([
            "id": id.json,
            "error": .object([
                "code": "invalid_result", "message": .string(message),
                // The component answered: it got the call.
                "data": .object(["target": "Notes", "action": .string(action), "delivered": true]),
            ]),
        ])
    }

    static func invalidResultEvent(_ daemonID: Int64, _ message: String) -> JSONValue {
        .object(["event": "mediator.invalid_result", "data": .object(["id": .int(daemonID), "message": .string(message)])])
    }

    static func cancelEvent(_ id: Int64) -> JSONValue { #"{"event":"mediator.cancel","data":{"id":\#(id)}}"#.json }

    @Test func matchingResultPassesByteForByte() {
        let d = setUp()
        d.send(#"{"id":"c","target":"Notes","action":"list"}"#, from: 1)
        #expect(d.takeOne(2)?["id"] == 1)
        // Spacing, 1.0 for an integer and members the schema does not name all pass as they came.
        d.send(#"{"id":1,"result":{"notes":[{"id":1.0,"text":"a" , "extra":[ ]},{"text":"b","id":2}]}}"#, from: 2)
        #expect(d.take(1) == [#"{"id":"c","result":{"notes":[{"id":1.0,"text":"a" , "extra":[ ]},{"text":"b","id":2}]}}"#])
        #expect(d.take(2).isEmpty)
        #expect(d.broker.inFlight.count == 0)
    }

    @Test func mismatchingResultGivesTheCallerInvalidResultAndTellsTheComponent() {
        let d = setUp()
        d.send(#"{"id":"c","target":"Notes","action":"list"}"#, from: 1)
        _ = d.take(2)
        d.send(#"{"id":1,"result":{"notes":[{"id":1,"text":"a"},{"id":2,"text":"b"},{"id":"3","text":"c"}]}}"#, from: 2)
        let message = "result.notes[2].id: expected integer, got string"
        #expect(d.takeJSON(1) == [Self.invalidResult(id: #""c""#, message, action: "list")])
        // An event, never a response line the component could take for an answer to a request of its own.
        #expect(d.takeJSON(2) == [Self.invalidResultEvent(1, message)])
        #expect(d.broker.inFlight.count == 0)
        #expect(d.broker.registry.target("Notes")?.instances[0].inFlight == 0)
        // The call is over: a second answer is dropped.
        #expect(d.send(#"{"id":1,"result":{"notes":[]}}"#, from: 2).isEmpty)
    }

    @Test(arguments: [
        (#"null"#, "result: expected object, got null"),
        (#"{}"#, #"result: missing required member "notes""#),
        (#"{"notes":[{"id":1}]}"#, #"result.notes[0]: missing required member "text""#),
        (#"{"notes":{"id":1}}"#, "result.notes: expected array, got object"),
    ])
    func mismatchesNameThePath(body: String, message: String) {
        let d = setUp()
        d.send(#"{"id":7,"target":"Notes","action":"list"}"#, from: 1)
        d.send(#"{"id":1,"result":\#(body)}"#, from: 2)
        #expect(d.takeJSON(1) == [Self.invalidResult(id: "7", message, action: "list")])
    }

    @Test func errorResponsePassesUnchecked() {
        let d = setUp()
        d.send(#"{"id":"c","target":"Notes","action":"list"}"#, from: 1)
        d.send(#"{"id":1,"error":{"code":"busy","message":"later","data":{"retry_ms":5}}}"#, from: 2)
        #expect(d.take(1) == [#"{"id":"c","error":{"code":"busy","message":"later","data":{"retry_ms":5}}}"#])
        #expect(d.take(2).filter { $0.contains("mediator.invalid_result") }.isEmpty)
    }

    /// A partial that does not match, or holds a lone surrogate (issue 23).
    @Test(arguments: [
        (#"{"n":"two"}"#, "result.n: expected integer, got string"),
        (#"{"n":"\ud800"}"#, loneSurrogateMessage),
    ])
    func badPartialEndsTheStream(partial: String, message: String) {
        let d = setUp()
        d.send(#"{"id":"s","target":"Notes","action":"watch","more":true}"#, from: 1)
        _ = d.take(2)
        d.send(#"{"id":1,"result":{"n":1},"continues":true}"#, from: 2)
        #expect(d.take(1) == [#"{"id":"s","result":{"n":1},"continues":true}"#])
        d.send(#"{"id":1,"result":\#(partial),"continues":true}"#, from: 2)
        #expect(d.takeJSON(1) == [Self.invalidResult(id: #""s""#, message, action: "watch")])
        // The component is told why, then to stop, as on a timeout.
        #expect(d.takeJSON(2) == [Self.invalidResultEvent(1, message), Self.cancelEvent(1)])
        #expect(d.broker.inFlight.count == 0)
        #expect(d.send(#"{"id":1,"result":{"n":3}}"#, from: 2).isEmpty)
        #expect(d.take(1).isEmpty)
    }

    @Test func badFinalAnswerOfAStreamIsNotCancelled() {
        let d = setUp()
        d.send(#"{"id":"s","target":"Notes","action":"watch","more":true}"#, from: 1)
        _ = d.take(2)
        d.send(#"{"id":1,"result":{"n":1},"continues":true}"#, from: 2)
        d.send(#"{"id":1,"result":{}}"#, from: 2)
        let message = #"result: missing required member "n""#
        #expect(d.takeJSON(1) == [
            #"{"id":"s","result":{"n":1},"continues":true}"#.json, Self.invalidResult(id: #""s""#, message, action: "watch"),
        ])
        #expect(d.takeJSON(2) == [Self.invalidResultEvent(1, message)])
    }

    @Test func continuesWithoutMoreIsCheckedAsTheFinalAnswer() {
        let d = setUp()
        d.send(#"{"id":"s","target":"Notes","action":"watch"}"#, from: 1)
        _ = d.take(2)
        d.send(#"{"id":1,"result":{"n":1.5},"continues":true}"#, from: 2)
        let message = "result.n: expected integer, got number"
        #expect(d.takeJSON(1) == [Self.invalidResult(id: #""s""#, message, action: "watch")])
        #expect(d.takeJSON(2) == [Self.invalidResultEvent(1, message)])
    }

    @Test func actionWithoutResultSchemaIsForwardedUnchecked() {
        let d = setUp()
        d.send(#"{"id":"f","target":"Notes","action":"free"}"#, from: 1)
        _ = d.take(2)
        // Nothing to check: the call carries no schema, so the response is never decoded.
        #expect(d.broker.inFlight.call(1)?.resultSchema == nil)
        d.send(#"{"id":1,"result":[1, "anything" ,{"x":null}]}"#, from: 2)
        #expect(d.take(1) == [#"{"id":"f","result":[1, "anything" ,{"x":null}]}"#])
        #expect(d.take(2).isEmpty)
    }

    // MARK: - Lone surrogates (issue 23)

    static let loneSurrogateMessage = #"result: lone surrogate escape \ud800 (half of a UTF-16 pair: no character) at byte 6"#

    /// A result with `"\ud800"` is well-formed JSON that no client can
    /// decode: refused at once, whether the action declares a result schema
    /// (`list`) or not (`free`), instead of being dropped as malformed.
    @Test(arguments: ["list", "free"])
    func loneSurrogateInAResultIsRefusedAtOnce(action: String) {
        let d = setUp()
        d.send(#"{"id":"c","target":"Notes","action":"\#(action)"}"#, from: 1)
        _ = d.take(2)
        d.send(#"{"id":1,"result":{"x":"\ud800"}}"#, from: 2)
        #expect(d.takeJSON(1) == [Self.invalidResult(id: #""c""#, Self.loneSurrogateMessage, action: action)])
        #expect(d.takeJSON(2) == [Self.invalidResultEvent(1, Self.loneSurrogateMessage)])
        #expect(d.broker.inFlight.count == 0)
        #expect(d.broker.peers[2]?.consecutiveBadFrames == 0)
    }

    /// The same in a component's error, whose message is where such a
    /// string usually sits: refused at once rather than dropped.
    @Test func loneSurrogateInAnErrorIsRefusedAtOnce() {
        let d = setUp()
        d.send(#"{"id":"c","target":"Notes","action":"free"}"#, from: 1)
        _ = d.take(2)
        d.send(#"{"id":1,"error":{"code":"broken","message":"\ud800"}}"#, from: 2)
        let message = #"error: lone surrogate escape \ud800 (half of a UTF-16 pair: no character) at byte 28"#
        #expect(d.takeJSON(1) == [Self.invalidResult(id: #""c""#, message, action: "free")])
        #expect(d.takeJSON(2) == [Self.invalidResultEvent(1, message)])
        #expect(d.broker.inFlight.count == 0)
    }

    @Test func referenceInParamsIsEnforcedOnCalls() {
        let d = setUp()
        d.send(#"{"id":"a","target":"Notes","action":"add","params":{"note":{"id":"x","text":"t"}}}"#, from: 1)
        #expect(d.take(1) == [errorLine(id: #""a""#, "invalid_params", "params.note.id: expected integer, got string", delivered: false)])
        #expect(d.take(2).isEmpty)
        d.send(#"{"id":"b","target":"Notes","action":"add","params":{"note":{"id":1,"text":"t"}}}"#, from: 1)
        #expect(d.takeOne(2)?["params"] == #"{"note":{"id":1,"text":"t"}}"#.json)
    }

    @Test func notFoundFallbackIsCheckedAgainstItsOwnResultSchema() {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("Notes", actions: #"[{"name":"notFound","result":{"type":"object"}}]"#, from: 2)
        d.send(#"{"id":"n","target":"Notes","action":"other"}"#, from: 1)
        _ = d.take(2)
        d.send(#"{"id":1,"result":5}"#, from: 2)
        #expect(d.takeJSON(1) == [Self.invalidResult(id: #""n""#, "result: expected object, got integer", action: "notFound")])
    }

    @Test func describeEchoesTheExtensions() {
        let d = setUp()
        let described = d.daemon("describe", #"{"target":"Notes"}"#, from: 1)
        #expect(described?["result"]?["actions"] == Self.actions.json)
    }

    @Test(arguments: [
        (##"[{"name":"list","result":{"properties":{"x":{"$ref":"#/$defs/Nope"}}}}]"##,
         #"action "list": result.properties.x.$ref: no definition "Nope" in the root schema's "$defs""#),
        (##"[{"name":"list","params":{"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}}}}]"##,
         #"action "list": params.$defs.A: a cycle of "$ref" with no object or array in between: A -> B -> A"#),
        (##"[{"name":"list","result":{"items":{"$ref":"other.json#/Note"}}}]"##,
         ##"action "list": result.items.$ref: must be "#/$defs/NAME" (a definition of the root schema), got "other.json#/Note""##),
        (#"[{"name":"w","more":true,"oneway":true}]"#, #"action "w": "more" and "oneway" cannot both be true"#),
    ])
    func registerRefusesBadSpecs(actions: String, message: String) {
        let d = BrokerDriver()
        d.connect(2)
        let answer = d.daemon("register", #"{"target":"Notes","actions":\#(actions)}"#, from: 2)
        #expect(errorCode(answer) == "bad_request")
        #expect(answer?["error"]?["message"]?.stringValue?.hasSuffix(message) == true, "\(String(describing: answer))")
    }
}
