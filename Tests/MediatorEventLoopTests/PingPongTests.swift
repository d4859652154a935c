import EventLoopPingPong
import Testing

/// The round-trip measurement of Benchmarks/eventloop-bench, small: every
/// driver completes its round trips; the figures are printed, not judged
/// (a debug build, a shared machine).
@Suite("sd-event: one I/O round trip, against epoll and poll", .serialized, .timeLimit(.minutes(1)))
struct PingPongTests {
    @Test(arguments: PingPong.Peer.allCases, PingPong.Driver.allCases)
    func everyDriverCompletesItsRoundTrips(peer: PingPong.Peer, driver: PingPong.Driver) throws {
        let measurement = try PingPong.measure(driver, peer: peer, roundTrips: 2000)
        #expect(measurement.roundTrips == 2000)
        print("\(peer.rawValue), \(driver.rawValue): \(measurement.perRoundTrip) per round trip (debug build)")
    }
}
