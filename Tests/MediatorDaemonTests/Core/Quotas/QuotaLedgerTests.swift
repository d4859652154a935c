import Testing

@testable import MediatorDaemon

/// The per-uid bookkeeping on its own: no broker, no peers, no logger.
@Suite("QuotaLedger")
struct QuotaLedgerTests {
    static let limit = 1000

    func ledger() -> QuotaLedger {
        var ledger = QuotaLedger()
        ledger.admit(1, uid: 1000)
        ledger.admit(2, uid: 1000)
        ledger.admit(3, uid: 1001)
        return ledger
    }

    @Test func connectionsAreKeptByUIDAndForgottenWhenTheLastGoes() {
        var ledger = ledger()
        #expect(ledger.connections(of: 1000) == [1, 2])
        #expect(ledger.remove(1, uid: 1000, queueLimit: Self.limit).isEmpty)
        #expect(ledger.connections(of: 1000) == [2])
        _ = ledger.remove(2, uid: 1000, queueLimit: Self.limit)
        #expect(ledger.connectionsByUID[1000] == nil)
    }

    @Test(arguments: [
        // used, adding, limit: fits?
        (0, 1, 1, true), (1, 1, 1, false), (5, 0, 5, true), (5, 1, 5, false), (0, 11, 10, false),
    ])
    func aCheckFitsUpToTheLimit(used: Int, adding: Int, limit: Int, fits: Bool) {
        var ledger = ledger()
        let check = ledger.check(.subscriptions, uid: 1000, used: used, adding: adding, limit: limit)
        #expect((check == .fits) == fits)
    }

    @Test func uidZeroAlwaysFits() {
        var ledger = QuotaLedger()
        #expect(ledger.check(.connections, uid: 0, used: 1 << 40, adding: 1, limit: 0) == .fits)
    }

    @Test func aRefusalIsFirstOfItsEpisodeOnlyUntilTheUIDFitsAgain() {
        var ledger = ledger()
        #expect(ledger.check(.registrations, uid: 1000, used: 3, adding: 1, limit: 3) == .refused(firstOfEpisode: true))
        #expect(ledger.check(.registrations, uid: 1000, used: 3, adding: 1, limit: 3) == .refused(firstOfEpisode: false))
        #expect(
            ledger.check(.subscriptions, uid: 1000, used: 3, adding: 1, limit: 3) == .refused(firstOfEpisode: true),
            "another quota has its own episode")
        #expect(ledger.check(.registrations, uid: 1001, used: 9, adding: 1, limit: 3) == .refused(firstOfEpisode: true))
        #expect(ledger.check(.registrations, uid: 1000, used: 2, adding: 1, limit: 3) == .fits)
        #expect(ledger.check(.registrations, uid: 1000, used: 3, adding: 1, limit: 3) == .refused(firstOfEpisode: true))
    }

    @Test func queuedBytesAddUpByUIDAndOnlyNonzeroSumsAreKept() {
        var ledger = ledger()
        #expect(ledger.nothingQueued)
        #expect(ledger.setQueued(1, uid: 1000, bytes: 300, limit: Self.limit).isEmpty)
        #expect(ledger.setQueued(2, uid: 1000, bytes: 200, limit: Self.limit).isEmpty)
        #expect(ledger.queuedBytes(uid: 1000) == 500)
        #expect(ledger.queuedBytes(of: 1) == 300)
        #expect(ledger.setQueued(1, uid: 1000, bytes: 0, limit: Self.limit).isEmpty)
        #expect(ledger.setQueued(2, uid: 1000, bytes: 0, limit: Self.limit).isEmpty)
        #expect(ledger.nothingQueued)
        #expect(ledger.setQueued(3, uid: 0, bytes: 1 << 30, limit: Self.limit).isEmpty, "uid 0 is not counted")
        #expect(ledger.nothingQueued)
    }

    @Test func anEpisodeBeginsPastTheQuotaNamingTheLargestBacklogAndEndsUnderHalf() {
        var ledger = ledger()
        #expect(ledger.setQueued(1, uid: 1000, bytes: 600, limit: Self.limit).isEmpty)
        #expect(
            ledger.setQueued(2, uid: 1000, bytes: 401, limit: Self.limit)
                == [.episodeBegan(uid: 1000, queuedBytes: 1001, culprit: 1)])
        var notices: [QuotaLedger.QueueNotice] = []
        #expect(ledger.refusesCall(toward: 1000, limit: Self.limit, &notices))
        #expect(ledger.skipsEvent(toward: 1000, limit: Self.limit, &notices))
        #expect(!ledger.refusesCall(toward: 1001, limit: Self.limit, &notices), "another uid is served")
        #expect(notices.isEmpty, "the episode is under way: nothing new to say")
        #expect(ledger.setQueued(1, uid: 1000, bytes: 200, limit: Self.limit).isEmpty, "601 is not under half")
        #expect(
            ledger.setQueued(2, uid: 1000, bytes: 0, limit: Self.limit)
                == [.episodeEnded(uid: 1000, QuotaLedger.QueueEpisode(refusedCalls: 1, skippedEvents: 1), queuedBytes: 200)])
    }

    @Test func theLastConnectionOfAUIDEndsItsEpisode() {
        var ledger = QuotaLedger()
        ledger.admit(1, uid: 1000)
        _ = ledger.setQueued(1, uid: 1000, bytes: 1500, limit: Self.limit)
        #expect(
            ledger.remove(1, uid: 1000, queueLimit: Self.limit)
                == [.episodeEnded(uid: 1000, QuotaLedger.QueueEpisode(), queuedBytes: 0)])
        #expect(ledger.nothingQueued)
    }

    @Test func pastTwiceTheQuotaTheLargestBacklogsGoUntilTheUIDIsUnder() {
        var ledger = ledger()
        _ = ledger.setQueued(2, uid: 1000, bytes: 400, limit: Self.limit)
        #expect(ledger.setQueued(1, uid: 1000, bytes: 1600, limit: Self.limit) == [
            .episodeBegan(uid: 1000, queuedBytes: 2000, culprit: 1)
        ])
        #expect(ledger.setQueued(2, uid: 1000, bytes: 401, limit: Self.limit) == [
            .disconnect(1, uid: 1000, queuedBytes: 1600, uidQueuedBytes: 2001),
            .episodeEnded(uid: 1000, QuotaLedger.QueueEpisode(), queuedBytes: 401),  // 401 is under half the quota
        ])
        #expect(ledger.queuedBytes(uid: 1000) == 401)
        #expect(ledger.queuedBytes(of: 1) == 0, "its figure goes at once, so that it is not picked twice")
    }

    @Test func aQuotaNearIntMaxHasNoOverflow() {
        var ledger = ledger()
        #expect(ledger.setQueued(1, uid: 1000, bytes: Int.max / 2 + 1, limit: Int.max).isEmpty)
    }
}
