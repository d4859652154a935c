import Testing

@testable import MediatorStatistics

@Suite struct SlowCallLogTests {
    func call(_ number: Int) -> SlowCall {
        SlowCall(
            target: "T", action: "a\(number)", pid: 1, uid: 2, durationNanoseconds: Int64(number), code: "ok",
            endedAtNanoseconds: Int64(number))
    }

    @Test func keepsTheLastCapacityCallsOldestFirst() {
        var log = SlowCallLog(capacity: 3)
        for number in 1...2 { log.append(call(number)) }
        #expect(log.entries.map(\.action) == ["a1", "a2"])
        for number in 3...7 { log.append(call(number)) }
        #expect(log.entries.map(\.action) == ["a5", "a6", "a7"])
        #expect(log.total == 7)
    }
}
