import MediatorProtocol
import Testing

@testable import MediatorClient

/// A request's `caller` is read member by member from its bytes; it must
/// come out as reading the parsed value would.
@Suite("Caller from JSON bytes")
struct CallerTests {
    @Test(arguments: [
        #"{"pid":4100,"uid":1000,"gid":1000,"name":"cli"}"#,
        #"{"gid":0,"uid":0,"pid":1}"#,
        #"{"pid":1,"uid":2,"gid":3,"name":null,"extra":{"x":[1]}}"#,
        #"{"pid":1.0,"uid":2,"gid":3}"#,
        #"{"pid":-1,"uid":4294967295,"gid":3}"#,
        #"{"pid":1,"uid":4294967296,"gid":3}"#,
        #"{"pid":2147483648,"uid":1,"gid":3}"#,
        #"{"pid":"1","uid":2,"gid":3}"#,
        #"{"uid":2,"gid":3}"#,
        #"{"pid":1,"uid":2,"gid":3,"pid":9}"#,
        #"[1,2,3]"#,
        #"{"pid":1,"uid":2,"gid":3"#,
    ])
    func sameAsFromTheParsedValue(text: String) {
        let fromValue = (try? JSONParser.parse(text)).flatMap(Caller.init(json:))
        let fromBytes = Array(text.utf8).withUnsafeBytes { Caller(jsonBytes: $0) }
        #expect(fromBytes == fromValue)
    }
}
