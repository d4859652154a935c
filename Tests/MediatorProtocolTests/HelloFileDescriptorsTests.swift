import Testing

@testable import MediatorProtocol

/// `hello`'s `fds` (params) and `max_fds` (result), contract section 8.
@Suite struct HelloFileDescriptorsTests {
    @Test(arguments: [
        (#"{"protocol":1}"#, false),
        (#"{"protocol":1,"fds":true}"#, true),
        (#"{"protocol":1,"fds":false}"#, false),
        (#"{"name":"x","fds":true}"#, true),
    ])
    func paramsSayWhetherThePeerTakesDescriptors(json: String, accepts: Bool) throws {
        let params = try #require(JSONParser.parse(json).objectValue)
        #expect(try HelloFileDescriptors.accepts(params: params) == accepts)
    }

    @Test(arguments: [
        (#"{"fds":1}"#, "integer"), (#"{"fds":"true"}"#, "string"), (#"{"fds":null}"#, "null"), (#"{"fds":[true]}"#, "array"),
    ])
    func fdsThatIsNotABooleanIsABadRequest(json: String, type: String) throws {
        let params = try #require(JSONParser.parse(json).objectValue)
        #expect(throws: MediatorError(.badRequest, "\"fds\" must be a boolean, got \(type)")) {
            try HelloFileDescriptors.accepts(params: params)
        }
    }

    @Test(arguments: [
        (#"{"protocol":1,"server":"mediatord"}"#, nil),
        (#"{"max_fds":16}"#, 16),
        (#"{"max_fds":253}"#, 253),
        (#"{"max_fds":64.0}"#, 64),
        (#"{"max_fds":15}"#, nil),
        (#"{"max_fds":254}"#, nil),
        (#"{"max_fds":0}"#, nil),
        (#"{"max_fds":-16}"#, nil),
        (#"{"max_fds":"16"}"#, nil),
        (#"{"max_fds":16.5}"#, nil),
        ("null", nil),
    ] as [(String, Int?)])
    func resultGivesTheDaemonsMaxFds(json: String, maxFds: Int?) throws {
        #expect(HelloFileDescriptors.maxFds(result: try JSONParser.parse(json)) == maxFds)
    }

    @Test func boundsAreTheContracts() {
        #expect(HelloFileDescriptors.maxFdsRange == 16...253)
        #expect(HelloFileDescriptors.paramsMember == "fds")
        #expect(HelloFileDescriptors.resultMember == "max_fds")
    }
}
