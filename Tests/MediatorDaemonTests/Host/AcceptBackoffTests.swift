import Glibc
import NIOCore
import Testing

@testable import MediatorDaemon

/// The listener's episodes of failing accepts (issue 10, defect 8), driven
/// with a fake clock: one warning per episode, a growing pause, a recovery.
@Suite("Accept back-off: pauses and episodes when accept fails for want of descriptors")
struct AcceptBackoffTests {
    static let t0 = NIODeadline.uptimeNanoseconds(5_000_000_000)

    static func at(_ millis: Int64) -> NIODeadline { t0 + .milliseconds(millis) }

    @Test("EMFILE and ENFILE are a descriptor shortage, ENOBUFS and ENOMEM a memory one, others none")
    func shortages() {
        #expect(AcceptBackoff.Shortage(errno: EMFILE) == .fileDescriptors)
        #expect(AcceptBackoff.Shortage(errno: ENFILE) == .fileDescriptors)
        #expect(AcceptBackoff.Shortage(errno: ENOBUFS) == .memory)
        #expect(AcceptBackoff.Shortage(errno: ENOMEM) == .memory)
        #expect(AcceptBackoff.Shortage(errno: EBADF) == nil)
        #expect(AcceptBackoff.Shortage(errno: ECONNABORTED) == nil)
    }

    @Test("Only the first failure begins an episode; the pause doubles up to its maximum")
    func pausesGrowOnePerEpisode() {
        var backoff = AcceptBackoff(initialPause: .milliseconds(20), maximumPause: .milliseconds(100))
        let failures = (0..<6).map { backoff.acceptFailed(errno: EMFILE, now: Self.at(Int64($0) * 10)) }
        #expect(failures.map(\.beginsEpisode) == [true, false, false, false, false, false])
        #expect(failures.map(\.pause) == [20, 40, 80, 100, 100, 100].map { TimeAmount.milliseconds($0) })
        #expect(backoff.episode?.failures == 6)
        #expect(backoff.episode?.errno == EMFILE)
    }

    @Test("An accepted connection ends the episode with its length, failures and refusals; the next begins afresh")
    func recoveryEndsEpisode() {
        var backoff = AcceptBackoff(initialPause: .milliseconds(20), maximumPause: .seconds(1))
        #expect(backoff.accepted(now: Self.at(0)) == nil, "no episode, nothing to report")
        _ = backoff.acceptFailed(errno: EMFILE, now: Self.at(100))
        backoff.refused(3)
        _ = backoff.acceptFailed(errno: ENFILE, now: Self.at(150))
        backoff.refused(1)
        let recovery = backoff.accepted(now: Self.at(1100))
        #expect(recovery == AcceptBackoff.Recovery(duration: .milliseconds(1000), failures: 2, refused: 4))
        #expect(backoff.episode == nil)
        #expect(backoff.accepted(now: Self.at(1200)) == nil, "one notice per episode")

        let next = backoff.acceptFailed(errno: EMFILE, now: Self.at(2000))
        #expect(next == AcceptBackoff.Failure(beginsEpisode: true, pause: .milliseconds(20)))
    }

    @Test("Refusals outside an episode are not counted")
    func refusalsOutsideEpisode() {
        var backoff = AcceptBackoff()
        backoff.refused(5)
        #expect(backoff.episode == nil)
        _ = backoff.acceptFailed(errno: EMFILE, now: Self.at(0))
        #expect(backoff.episode?.refused == 0)
    }

    @Test("A maximum below the initial pause is raised to it")
    func maximumNotBelowInitial() {
        var backoff = AcceptBackoff(initialPause: .milliseconds(50), maximumPause: .milliseconds(10))
        #expect(backoff.acceptFailed(errno: EMFILE, now: Self.at(0)).pause == .milliseconds(50))
        #expect(backoff.acceptFailed(errno: EMFILE, now: Self.at(1)).pause == .milliseconds(50))
    }
}
