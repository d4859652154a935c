import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// After a burst the daemon's tables give their storage back (issue 10:
/// RSS stayed at its high-water mark).
@Suite("Sparse tables are rebuilt at their size")
struct SparseStorageTests {
    @Test func aDictionaryLeftMostlyEmptyIsRebuilt() {
        var table: [Int: String] = [:]
        for n in 0..<10_000 { table[n] = "value \(n)" }
        let burst = table.capacity
        for n in 10..<10_000 { table[n] = nil }
        #expect(table.capacity == burst, "a dictionary does not shrink by itself")
        let shrank = table.shrinkIfSparse()
        #expect(shrank)
        #expect(table.capacity < 64)
        #expect(table.count == 10 && table[3] == "value 3", "nothing lost")
        let again = table.shrinkIfSparse()
        #expect(!again, "not again once it fits")
    }

    @Test func smallOrFullTablesAreLeftAlone() {
        var small: [Int: Int] = [:]
        for n in 0..<100 { small[n] = n }
        for n in 0..<99 { small[n] = nil }
        let smallShrank = small.shrinkIfSparse()
        #expect(!smallShrank, "under the floor")
        var full = Set(0..<5_000)
        let fullShrank = full.shrinkIfSparse()
        #expect(!fullShrank)
        full.subtract(0..<4_990)
        let emptiedShrank = full.shrinkIfSparse()
        #expect(emptiedShrank)
        #expect(full == Set(4_990..<5_000))
    }

    @Test func theBrokersTablesShrinkAfterABurstOfCallsAndConnections() {
        let d = BrokerDriver()
        d.connect(1)
        d.register("T", from: 1)
        for connection in 2..<3_002 {
            d.connect(connection)
            d.send(#"{"id":1,"target":"T","action":"a"}"#, from: connection)
        }
        #expect(d.broker.inFlight.count == 3_000)
        for connection in 2..<3_002 { d.disconnect(connection) }
        #expect(d.broker.inFlight.count == 0)
        let shrank = d.broker.shrinkSparseTables()
        #expect(shrank)
        #expect(d.broker.peers.capacity < 64)
        // Routing goes on as before.
        d.connect(9_000)
        d.send(#"{"id":1,"target":"T","action":"a"}"#, from: 9_000)
        #expect(d.broker.inFlight.count == 1)
    }
}
