import Testing

@testable import MediatorProtocol

/// The envelope's `fds` member (contract section 8): how many descriptors
/// came with a request or a response; none may come with an event.
@Suite struct EnvelopeFdsTests {
    struct Accepted: CustomTestStringConvertible, Sendable {
        var frame: String
        var kind: Envelope.Kind
        var fds: Int
        var testDescription: String { frame }
    }

    static let accepted: [Accepted] = [
        Accepted(frame: #"{"id":1,"target":"a","action":"b"}"#, kind: .request, fds: 0),
        Accepted(frame: #"{"id":1,"target":"a","action":"b","fds":1,"params":{"f":{"$fd":0}}}"#, kind: .request, fds: 1),
        Accepted(frame: #"{"fds":253,"target":"a","action":"b"}"#, kind: .request, fds: 253),
        Accepted(frame: #"{"id":1,"target":"a","action":"b","fds":2.0}"#, kind: .request, fds: 2),
        Accepted(frame: #"{"id":1,"target":"a","action":"b","\u0066ds":4}"#, kind: .request, fds: 4),
        Accepted(frame: #"{"id":1,"target":"a","action":"b","fds":0,"fds":3}"#, kind: .request, fds: 3),
        Accepted(frame: #"{ "id" : 1 , "fds" : 5 , "target" : "a" , "action" : "b" }"#, kind: .request, fds: 5),
        Accepted(frame: #"{"id":7,"result":{"$fd":0},"fds":1}"#, kind: .response, fds: 1),
        Accepted(frame: #"{"id":7,"result":[1],"continues":true,"fds":2}"#, kind: .response, fds: 2),
        Accepted(frame: #"{"id":7,"error":{"code":"x","message":"m"},"fds":1}"#, kind: .response, fds: 1),
        Accepted(frame: #"{"id":7,"result":null}"#, kind: .response, fds: 0),
        Accepted(frame: #"{"event":"a.b","data":{}}"#, kind: .event, fds: 0),
    ]

    @Test(arguments: accepted)
    func fdsIsRecorded(_ testCase: Accepted) throws {
        let frame = Array(testCase.frame.utf8)
        let envelope = try EnvelopeParser.parse(frame).get()
        #expect(envelope.kind == testCase.kind)
        #expect(envelope.fds == testCase.fds)
        // The client's path, which decodes the payloads, reads it the same.
        var payloads = EnvelopeParser.Payloads()
        let decoded = try frame.withUnsafeBytes { try EnvelopeParser.parse($0, decoding: &payloads).get() }
        #expect(decoded == envelope)
    }

    struct Refused: CustomTestStringConvertible, Sendable {
        var frame: String
        var id: MessageID?
        /// A part of the message.
        var says: String
        var testDescription: String { frame }
    }

    static let refused: [Refused] = [
        Refused(frame: #"{"id":9,"target":"a","action":"b","fds":0}"#, id: .int(9), says: "positive integer"),
        Refused(frame: #"{"id":9,"target":"a","action":"b","fds":-1}"#, id: .int(9), says: "positive integer"),
        Refused(frame: #"{"id":9,"target":"a","action":"b","fds":1.5}"#, id: .int(9), says: "positive integer"),
        Refused(frame: #"{"id":9,"target":"a","action":"b","fds":"1"}"#, id: .int(9), says: "positive integer"),
        Refused(frame: #"{"id":9,"target":"a","action":"b","fds":true}"#, id: .int(9), says: "positive integer"),
        Refused(frame: #"{"id":9,"target":"a","action":"b","fds":null}"#, id: .int(9), says: "positive integer"),
        Refused(frame: #"{"id":9,"target":"a","action":"b","fds":[1]}"#, id: .int(9), says: "positive integer"),
        Refused(frame: #"{"id":9,"target":"a","action":"b","fds":{"n":1}}"#, id: .int(9), says: "positive integer"),
        Refused(frame: #"{"id":9,"target":"a","action":"b","fds":99999999999999999999}"#, id: .int(9), says: "positive integer"),
        Refused(frame: #"{"id":9,"target":"a","action":"b","fds":254}"#, id: .int(9), says: "at most 253"),
        Refused(frame: #"{"id":9,"target":"a","action":"b","fds":3,"fds":0}"#, id: .int(9), says: "positive integer"),
        Refused(frame: #"{"target":"a","action":"b","fds":0}"#, id: nil, says: "positive integer"),
        Refused(frame: #"{"id":"r","result":1,"fds":0}"#, id: .string("r"), says: "positive integer"),
        Refused(frame: #"{"id":"r","error":{"code":"x","message":"m"},"fds":1000}"#, id: .string("r"), says: "at most 253"),
        Refused(frame: #"{"event":"a.b","fds":1}"#, id: nil, says: "an event carries no descriptors"),
        Refused(frame: #"{"event":"a.b","data":{"$fd":0},"fds":0}"#, id: nil, says: "an event carries no descriptors"),
        Refused(frame: #"{"id":3,"event":"a.b","fds":1}"#, id: .int(3), says: "an event carries no descriptors"),
    ]

    @Test(arguments: refused)
    func badFdsIsABadRequestWithTheID(_ testCase: Refused) {
        switch EnvelopeParser.parse(Array(testCase.frame.utf8)) {
        case .success(let envelope):
            Issue.record("accepted as \(envelope.kind) with fds \(envelope.fds)")
        case .failure(let failure):
            #expect(failure.error.code == .badRequest)
            #expect(failure.id == testCase.id)
            #expect(failure.error.message.contains(testCase.says), "\(failure.error.message)")
        }
    }

    @Test func fdsBoundsAreTheContracts() {
        #expect(ProtocolConstants.maxFdsPerMessageLimit == 253)
        #expect(ProtocolConstants.minimumMaxFds == 16)
        var envelope = Envelope(kind: .request)
        envelope.fds = ProtocolConstants.maxFdsPerMessageLimit
        #expect(envelope.fds == 253)
    }
}
