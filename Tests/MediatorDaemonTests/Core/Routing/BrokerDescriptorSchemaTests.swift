import MediatorProtocol
import Testing

@testable import MediatorDaemon

/// A params or result member declared `"format": "fd"` (issue 26) is
/// checked as a descriptor: `{"$fd": I}` with I below the message's `fds`.
/// This daemon passes no descriptors yet (a message with `fds` is refused
/// before), so every value here has none to refer to.
@Suite("Broker: descriptor members in schemas")
struct BrokerDescriptorSchemaTests {
    static let actions = """
        [{"name":"attach","params":{"type":"object","required":["file"],"properties":{"file":{"type":"object","format":"fd"}}}},
         {"name":"open","result":{"type":"object","required":["file"],"properties":{"file":{"type":"object","format":"fd"}}}}]
        """

    /// Caller 1, component 2 serving Files.
    func setUp() -> BrokerDriver {
        let d = BrokerDriver()
        d.connect(1)
        d.connect(2)
        d.register("Files", actions: Self.actions, from: 2)
        return d
    }

    @Test(arguments: [
        (#"{"file":{"$fd":0}}"#, #"params.file: {"$fd": 0} refers to no descriptor: the message has no "fds""#),
        (#"{"file":"/etc/passwd"}"#, #"params.file: expected object, got string"#),
        (#"{"file":{"path":"/etc/passwd"}}"#,
         #"params.file: expected a descriptor, {"$fd": I} with I an integer and no other member; got another object"#),
    ])
    func paramsWithoutTheDescriptorAreInvalid(params: String, message: String) {
        let d = setUp()
        d.send(#"{"id":"c","target":"Files","action":"attach","params":\#(params)}"#, from: 1)
        let answer = d.takeOne(1)
        #expect(answer?["error"]?["code"] == "invalid_params")
        #expect(answer?["error"]?["message"] == .string(message))
        #expect(d.take(2).isEmpty, "the component never sees the call")
    }

    @Test func aResultWithoutTheDescriptorIsInvalid() {
        let d = setUp()
        d.send(#"{"id":"c","target":"Files","action":"open"}"#, from: 1)
        #expect(d.takeOne(2)?["id"] == 1)
        d.send(#"{"id":1,"result":{"file":{"$fd":0}}}"#, from: 2)
        let answer = d.takeOne(1)
        #expect(answer?["error"]?["code"] == "invalid_result")
        #expect(answer?["error"]?["message"] == #"result.file: {"$fd": 0} refers to no descriptor: the message has no "fds""#)
    }
}
