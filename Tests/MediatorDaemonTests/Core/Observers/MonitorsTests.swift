import MediatorProtocol
import Testing

@testable import MediatorDaemon

/// Who watches what, on its own: no broker, no records written.
@Suite("Monitors")
struct MonitorsTests {
    @Test(arguments: [
        (#"{}"#, [], []),
        (#"{"targets":["Notes","app.*"]}"#, ["Notes", "app.*"], []),
        (#"{"events":["*"],"targets":[]}"#, [], ["*"]),
    ] as [(String, [String], [String])])
    func aFilterIsReadFromTheParams(params: String, targets: [String], events: [String]) throws {
        let members = try #require(try JSONParser.parse(Array(params.utf8)).objectValue)
        #expect(Monitors.Filter.parse(members) == .success(Monitors.Filter(targets: targets, events: events)))
    }

    @Test(arguments: [#"{"targets":"Notes"}"#, #"{"targets":[1]}"#, #"{"events":["a b"]}"#, #"{"events":["*.x"]}"#])
    func aFilterThatIsNoListOfPatternsIsABadRequest(params: String) throws {
        let members = try #require(try JSONParser.parse(Array(params.utf8)).objectValue)
        guard case .failure(let error) = Monitors.Filter.parse(members) else {
            Issue.record("accepted \(params)")
            return
        }
        #expect(error.code == .badRequest)
    }

    @Test func aRecordGoesToTheMonitorsThatWantItAndNotToItsOwnPeers() {
        var monitors = Monitors()
        #expect(monitors.isEmpty)
        monitors.attach(1, Monitors.Filter())
        monitors.attach(2, Monitors.Filter(targets: ["Notes"]))
        monitors.attach(3, Monitors.Filter(events: ["news.*"]))
        #expect(Set(monitors.wanting(target: "Notes", event: nil, from: 9, to: 8)) == [1, 2, 3])
        #expect(Set(monitors.wanting(target: "Kv", event: nil, from: 9, to: 8)) == [1, 3])
        #expect(Set(monitors.wanting(target: nil, event: "news.a", from: 9, to: nil)) == [1, 2, 3])
        #expect(Set(monitors.wanting(target: nil, event: "weather", from: 9, to: nil)) == [1, 2])
        #expect(Set(monitors.wanting(target: "Notes", event: nil, from: 1, to: 2)) == [3], "its peers saw it")
        monitors.detach(1)
        monitors.attach(2, Monitors.Filter(targets: ["Kv"]))
        #expect(Set(monitors.wanting(target: "Notes", event: nil, from: 9, to: 8)) == [3])
        monitors.detach(2)
        monitors.detach(3)
        #expect(monitors.isEmpty)
    }
}
