import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// Messages with descriptors (contract section 8), with the driver playing
/// a host that passes them: forwarded with their handle where every peer
/// said `fds: true`, refused out loud (and released) everywhere else. Each
/// test ends with no handle held: every one was sent on or released once.
@Suite("Broker: messages with descriptors")
struct BrokerDescriptorTests {
    /// Component on 1 serves Svc, caller on 2; both said `fds: true`
    /// unless `componentFds`/`callerFds` say otherwise.
    func setUp(
        componentFds: Bool = true, callerFds: Bool = true, _ configure: (inout DaemonConfiguration) -> Void = { _ in }
    ) -> BrokerDriver {
        let d = BrokerDriver(configure)
        d.broker.passesDescriptors = true
        d.connect(1)
        d.connect(2)
        if componentFds { hello(d, from: 1) }
        if callerFds { hello(d, from: 2) }
        d.register("Svc", from: 1)
        return d
    }

    @discardableResult
    func hello(_ d: BrokerDriver, from connection: ConnectionID, sourceLocation: SourceLocation = #_sourceLocation) -> JSONValue? {
        d.daemon("hello", #"{"protocol":1,"fds":true}"#, from: connection, sourceLocation: sourceLocation)
    }

    /// The daemon id of the one request forwarded to `connection`.
    func forwardedID(_ d: BrokerDriver, to connection: ConnectionID = 1) -> Int64 {
        d.takeOne(connection)?["id"]?.intValue ?? -1
    }

    // MARK: - hello

    @Test func helloGrantsMaxFdsOnlyToAPeerThatAsksFromAHostThatPasses() {
        let d = BrokerDriver { $0.maxFdsPerMessage = 32 }
        d.connect(1)
        #expect(d.daemon("hello", #"{"protocol":1}"#, from: 1)?["result"]?["max_fds"] == nil)
        #expect(d.daemon("hello", #"{"protocol":1,"fds":true}"#, from: 1)?["result"]?["max_fds"] == nil, "the host passes none")
        d.broker.passesDescriptors = true
        #expect(d.daemon("hello", #"{"protocol":1,"fds":false}"#, from: 1)?["result"]?["max_fds"] == nil)
        #expect(d.daemon("hello", #"{"protocol":1,"fds":true}"#, from: 1)?["result"]?["max_fds"] == 32)
    }

    @Test func helloWithFdsThatIsNoBooleanIsABadRequest() {
        let d = setUp()
        #expect(errorCode(d.daemon("hello", #"{"protocol":1,"fds":"yes"}"#, from: 2)) == "bad_request")
    }

    // MARK: - Requests

    @Test func aRequestGoesToAComponentThatTakesDescriptorsWithItsFdsAndHandle() {
        let d = setUp()
        let passed = d.send(#"{"id":7,"target":"Svc","action":"a","params":{"f":{"$fd":1},"g":{"$fd":0}},"fds":2}"#, descriptors: 2, from: 2)
        let forwarded = d.takeOne(1)
        #expect(forwarded?["fds"] == 2)
        #expect(forwarded?["params"] == #"{"f":{"$fd":1},"g":{"$fd":0}}"#.json)
        #expect(d.descriptorsSent[1] == [passed])
        #expect(d.descriptorsReleased.isEmpty)
        #expect(d.descriptorsHeld.isEmpty)
    }

    @Test func aOnewayRequestWithDescriptorsIsForwardedToo() {
        let d = setUp()
        let passed = d.send(#"{"target":"Svc","action":"a","params":{"$fd":0},"fds":1}"#, descriptors: 1, from: 2)
        #expect(d.takeOne(1)?["fds"] == 1)
        #expect(d.descriptorsSent[1] == [passed])
        #expect(d.descriptorsHeld.isEmpty)
    }

    /// Sends a request with descriptors from 2 and checks it was refused with
    /// `code`, not forwarded, its descriptors released.
    func expectRefused(
        _ d: BrokerDriver, _ line: String = #"{"id":7,"target":"Svc","action":"a","params":{"$fd":0},"fds":1}"#,
        descriptors: Int = 1, code: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let passed = d.send(line, descriptors: descriptors, from: 2)
        let answer = d.takeOne(2, sourceLocation: sourceLocation)
        #expect(answer?["id"] == 7, sourceLocation: sourceLocation)
        #expect(errorCode(answer) == code, "\(String(describing: answer))", sourceLocation: sourceLocation)
        #expect(answer?["error"]?["data"]?["delivered"] == false, sourceLocation: sourceLocation)
        #expect(d.take(1).isEmpty, "not forwarded", sourceLocation: sourceLocation)
        #expect(d.descriptorsReleased.contains(passed), sourceLocation: sourceLocation)
        #expect(d.descriptorsHeld.isEmpty, sourceLocation: sourceLocation)
        #expect(d.broker.inFlight.count == 0, sourceLocation: sourceLocation)
    }

    /// A `{"$fd": I}` that names no descriptor of the message, is no
    /// integer or has another member beside it is refused, not forwarded.
    @Test(arguments: [
        #"{"f":{"$fd":1}}"#, #"{"f":{"$fd":-1}}"#, #"{"f":{"$fd":"0"}}"#, #"{"f":{"$fd":0,"x":1}}"#,
    ])
    func aReferenceToNoDescriptorOfTheMessageIsABadRequest(params: String) {
        let d = setUp()
        expectRefused(d, #"{"id":7,"target":"Svc","action":"a","params":\#(params),"fds":1}"#, code: "bad_request")
    }

    @Test func anAnswerReferringToNoDescriptorOfItsOwnIsABadRequestForTheCaller() {
        let d = setUp()
        d.send(#"{"id":"c1","target":"Svc","action":"a"}"#, from: 2)
        let daemonID = forwardedID(d)
        let passed = d.send(#"{"id":\#(daemonID),"result":{"file":{"$fd":3}},"fds":1}"#, descriptors: 1, from: 1)
        let answer = d.takeOne(2)
        #expect(errorCode(answer) == "bad_request", "\(String(describing: answer))")
        #expect(d.descriptorsReleased == [passed])
        #expect(d.descriptorsHeld.isEmpty)
    }

    @Test func aCalleeThatDidNotSayFdsIsNotSupported() {
        expectRefused(setUp(componentFds: false), code: "fds_not_supported")
    }

    @Test func theDaemonsOwnTargetTakesNoDescriptors() {
        let d = setUp()
        expectRefused(d, #"{"id":7,"target":"mediator","action":"ping","fds":1}"#, code: "fds_not_supported")
    }

    @Test func aSenderThatDidNotSayFdsIsABadRequest() {
        expectRefused(setUp(callerFds: false), code: "bad_request")
    }

    @Test func moreThanMaxFdsPerMessageIsABadRequest() {
        let d = setUp { $0.maxFdsPerMessage = 16 }
        expectRefused(d, #"{"id":7,"target":"Svc","action":"a","fds":17}"#, descriptors: 17, code: "bad_request")
    }

    @Test func theInFlightQuotaOfTheSendersUIDIsOverloadedAndCounted() {
        let d = setUp { $0.maxFdsInFlightPerUID = 4 }
        // As the host counts them: held here (arrived, not yet sent on).
        d.broker.descriptorsHeld = { [unowned d] uid in d.descriptorsHeld.filter { $0.uid == uid }.reduce(0) { $0 + $1.count } }
        let fits = d.send(#"{"target":"Svc","action":"a","fds":4}"#, descriptors: 4, from: 2)
        #expect(d.descriptorsSent[1] == [fits], "4 fit a quota of 4")
        _ = d.take(1)
        expectRefused(d, #"{"id":7,"target":"Svc","action":"a","fds":5}"#, descriptors: 5, code: "overloaded")
        let uid = BrokerDriver.credentials(2).uid
        #expect(d.broker.statistics.uids[uid]?.quotaRefusals["max_fds_in_flight_per_uid"] == 1)
    }

    /// A oneway request that is refused gets no answer; its descriptors are closed all the same.
    @Test(arguments: [#"{"target":"Svc","action":"a","fds":1}"#, #"{"target":"mediator","action":"ping","fds":1}"#])
    func aRefusedOnewayIsReleasedUnanswered(line: String) {
        let d = setUp(componentFds: false)
        let passed = d.send(line, descriptors: 1, from: 2)
        #expect(d.take(2).isEmpty && d.take(1).isEmpty)
        #expect(d.descriptorsReleased == [passed])
        #expect(d.descriptorsHeld.isEmpty)
    }

    @Test func aTargetNotFoundReleasesTheDescriptors() {
        let d = setUp()
        expectRefused(d, #"{"id":7,"target":"Nobody","action":"a","fds":1}"#, code: "target_not_found")
    }

    // MARK: - Answers

    @Test func anAnswerWithDescriptorsGoesToACallerThatTakesThem() {
        let d = setUp()
        d.send(#"{"id":"c1","target":"Svc","action":"a"}"#, from: 2)
        let daemonID = forwardedID(d)
        let passed = d.send(#"{"id":\#(daemonID),"result":{"file":{"$fd":0}},"fds":1}"#, descriptors: 1, from: 1)
        let answer = d.takeOne(2)
        #expect(answer?["id"] == "c1")
        #expect(answer?["fds"] == 1)
        #expect(answer?["result"] == #"{"file":{"$fd":0}}"#.json)
        #expect(d.descriptorsSent[2] == [passed])
        #expect(d.descriptorsHeld.isEmpty)
    }

    @Test func partialsWithDescriptorsGoToTheCallerEachWithItsHandle() {
        let d = setUp()
        d.send(#"{"id":1,"target":"Svc","action":"a","more":true}"#, from: 2)
        let daemonID = forwardedID(d)
        let first = d.send(#"{"id":\#(daemonID),"result":{"$fd":0},"continues":true,"fds":1}"#, descriptors: 1, from: 1)
        let second = d.send(#"{"id":\#(daemonID),"result":[{"$fd":0},{"$fd":1}],"fds":2}"#, descriptors: 2, from: 1)
        let answers = d.takeJSON(2)
        #expect(answers.map { $0["fds"] } == [1, 2])
        #expect(answers.first?["continues"] == true)
        #expect(d.descriptorsSent[2] == [first, second])
        #expect(d.broker.inFlight.count == 0)
        #expect(d.descriptorsHeld.isEmpty)
    }

    @Test func anAnswerWithDescriptorsReachesACallerWithoutThemAsFdsNotSupported() {
        let d = setUp(callerFds: false)
        d.send(#"{"id":"c1","target":"Svc","action":"a"}"#, from: 2)
        let daemonID = forwardedID(d)
        let passed = d.send(#"{"id":\#(daemonID),"result":{"file":{"$fd":0}},"fds":1}"#, descriptors: 1, from: 1)
        let answer = d.takeOne(2)
        #expect(answer?["id"] == "c1")
        #expect(errorCode(answer) == "fds_not_supported")
        #expect(answer?["error"]?["data"]?["delivered"] == true, "the component ran it")
        #expect(d.broker.inFlight.count == 0, "the call ended")
        #expect(d.descriptorsReleased == [passed])
        // A second answer to the finished call goes nowhere.
        d.send(#"{"id":\#(daemonID),"result":1}"#, from: 1)
        #expect(d.take(2).isEmpty)
        #expect(d.descriptorsHeld.isEmpty)
    }

    @Test func aPartialWithDescriptorsToACallerWithoutThemEndsTheStreamAndCancelsIt() {
        let d = setUp(callerFds: false)
        d.send(#"{"id":1,"target":"Svc","action":"a","more":true}"#, from: 2)
        let daemonID = forwardedID(d)
        let passed = d.send(#"{"id":\#(daemonID),"result":{"$fd":0},"continues":true,"fds":1}"#, descriptors: 1, from: 1)
        #expect(errorCode(d.takeOne(2)) == "fds_not_supported")
        let cancel = d.takeOne(1)
        #expect(cancel?["event"] == "mediator.cancel")
        #expect(cancel?["data"]?["id"]?.intValue == daemonID)
        #expect(d.descriptorsReleased == [passed])
        #expect(d.broker.inFlight.count == 0)
        #expect(d.descriptorsHeld.isEmpty)
    }

    @Test func anAnswerWithDescriptorsToACallerThatLeftIsReleased() {
        let d = setUp()
        d.send(#"{"id":1,"target":"Svc","action":"a"}"#, from: 2)
        let daemonID = forwardedID(d)
        d.disconnect(2)
        let passed = d.send(#"{"id":\#(daemonID),"result":{"$fd":0},"fds":1}"#, descriptors: 1, from: 1)
        #expect(d.descriptorsReleased == [passed])
        #expect(d.descriptorsHeld.isEmpty)
    }

    // MARK: - Held calls (a managed component starting)

    /// Svc is managed and not running; the caller on 2 said `fds: true`.
    func managed(_ configure: (inout DaemonConfiguration) -> Void = { _ in }) -> BrokerDriver {
        let d = BrokerDriver(configure)
        d.broker.passesDescriptors = true
        d.apply(d.broker.loadManifests([BrokerActivationTests.manifest("Svc", actions: ["a"])], now: d.now))
        d.connect(2)
        hello(d, from: 2)
        return d
    }

    /// The component process for the first spawn starts as `connection` and registers.
    func componentStarts(_ d: BrokerDriver, as connection: ConnectionID, fds: Bool) {
        d.apply(d.broker.processStarted(spawnID: d.spawns[0].spawnID, pid: 4100 + Int32(connection), now: d.now))
        d.connect(connection)
        if fds { hello(d, from: connection) }
        d.send(
            #"{"id":"reg","target":"mediator","action":"register","params":{"target":"Svc","actions":["a"]}}"#,
            from: connection)
    }

    @Test func aHeldCallKeepsItsDescriptorsAndForwardsThemOnceTheComponentRegisters() {
        let d = managed()
        let passed = d.send(#"{"id":1,"target":"Svc","action":"a","params":{"$fd":0},"fds":1}"#, descriptors: 1, from: 2)
        #expect(d.spawns.count == 1)
        #expect(d.descriptorsHeld == [passed], "held with the call")
        componentStarts(d, as: 7, fds: true)
        let forwarded = d.takeJSON(7).filter { $0["action"] == "a" }
        #expect(forwarded.first?["fds"] == 1)
        #expect(d.descriptorsSent[7] == [passed])
        #expect(d.descriptorsHeld.isEmpty)
    }

    @Test func aHeldCallForAComponentThatRegistersWithoutFdsIsNotSupported() {
        let d = managed()
        let passed = d.send(#"{"id":1,"target":"Svc","action":"a","fds":1}"#, descriptors: 1, from: 2)
        componentStarts(d, as: 7, fds: false)
        #expect(errorCode(d.takeOne(2)) == "fds_not_supported")
        #expect(d.descriptorsReleased == [passed])
        #expect(d.descriptorsHeld.isEmpty)
    }

    /// A held call ended by its timeout, or cancelled by its caller, releases its descriptors.
    @Test(arguments: ["timeout", "cancelled"])
    func aHeldCallThatEndsUnforwardedReleasesItsDescriptors(code: String) {
        let d = managed()
        let passed = d.send(#"{"id":1,"target":"Svc","action":"a","timeout_ms":200,"fds":3}"#, descriptors: 3, from: 2)
        if code == "timeout" {
            d.advance(ms: 200)
            d.expire()
        } else {
            d.send(#"{"target":"mediator","action":"cancel","params":{"id":1}}"#, from: 2)
        }
        #expect(errorCode(d.takeOne(2)) == code)
        #expect(d.descriptorsReleased == [passed])
        #expect(d.descriptorsHeld.isEmpty)
    }

    @Test func aHeldCallWhoseCallerLeftReleasesItsDescriptors() {
        let d = managed()
        let passed = d.send(#"{"id":1,"target":"Svc","action":"a","fds":1}"#, descriptors: 1, from: 2)
        d.disconnect(2)
        #expect(d.descriptorsReleased == [passed])
        componentStarts(d, as: 7, fds: true)
        #expect(d.takeJSON(7).filter { $0["action"] == "a" }.isEmpty)
        #expect(d.descriptorsHeld.isEmpty)
    }

    // MARK: - Descriptors that do not match "fds" (the host closed them)

    func mismatched(_ d: BrokerDriver, _ line: String, from connection: ConnectionID) {
        var buffer = ByteBufferAllocator().buffer(capacity: line.utf8.count)
        buffer.writeString(line)
        d.apply(d.broker.refuseMismatchedDescriptors(buffer, from: connection, problem: "2 arrived, 1 declared", now: d.now))
    }

    @Test func aMismatchedRequestWithAnIDIsABadRequest() {
        let d = setUp()
        mismatched(d, #"{"id":9,"target":"Svc","action":"a","fds":1}"#, from: 2)
        let answer = d.takeOne(2)
        #expect(answer?["id"] == 9)
        #expect(errorCode(answer) == "bad_request")
        #expect(answer?["error"]?["message"]?.stringValue?.contains("do not match") == true)
        #expect(d.take(1).isEmpty)
    }

    @Test func aMismatchedOnewayIsCountedAsABadFrameUnanswered() {
        let d = setUp()
        let before = d.broker.statistics.daemon.badFrames
        mismatched(d, #"{"target":"Svc","action":"a","fds":1}"#, from: 2)
        #expect(d.take(2).isEmpty)
        #expect(d.take(1).isEmpty)
        #expect(d.broker.statistics.daemon.badFrames == before + 1)
    }

    @Test func aMismatchedAnswerEndsTheCallWithABadRequestForTheCaller() {
        let d = setUp()
        d.send(#"{"id":"c1","target":"Svc","action":"a"}"#, from: 2)
        let daemonID = forwardedID(d)
        mismatched(d, #"{"id":\#(daemonID),"result":{"$fd":0},"fds":1}"#, from: 1)
        let answer = d.takeOne(2)
        #expect(answer?["id"] == "c1")
        #expect(errorCode(answer) == "bad_request")
        #expect(d.broker.inFlight.count == 0)
    }

    @Test func anAnswerOverMaxFdsIsABadRequestForTheCaller() {
        let d = setUp { $0.maxFdsPerMessage = 16 }
        d.send(#"{"id":"c1","target":"Svc","action":"a"}"#, from: 2)
        let daemonID = forwardedID(d)
        let passed = d.send(#"{"id":\#(daemonID),"result":1,"fds":17}"#, descriptors: 17, from: 1)
        #expect(errorCode(d.takeOne(2)) == "bad_request")
        #expect(d.descriptorsReleased == [passed])
        #expect(d.descriptorsHeld.isEmpty)
    }
}
