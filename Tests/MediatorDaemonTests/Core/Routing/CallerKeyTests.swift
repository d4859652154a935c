import MediatorProtocol
import Testing

@testable import MediatorDaemon

/// `CallsInFlight.CallerKey` hashes an integer id as one mixed word: keys
/// must still be found exactly, and a connection's own integer ids never
/// share a word (the mix is one-to-one in the id).
@Suite struct CallerKeyTests {
    typealias Key = CallsInFlight.CallerKey

    @Test func equalKeysHashEqually() {
        let pairs: [(Key, Key)] = [
            (Key(connection: 3, id: .int(7)), Key(connection: 3, id: .int(7))),
            (Key(connection: 3, id: .string("7")), Key(connection: 3, id: .string("7"))),
            (Key(connection: Int.max, id: .int(.min)), Key(connection: Int.max, id: .int(.min))),
        ]
        for (a, b) in pairs {
            #expect(a.hashValue == b.hashValue)
            for seed in [0, 1, -1, 12345] { #expect(a._rawHashValue(seed: seed) == b._rawHashValue(seed: seed)) }
        }
    }

    @Test func aDictionaryTellsEveryKeyApart() {
        var table: [Key: Int] = [:]
        var expected: [(Key, Int)] = []
        var value = 0
        for connection in [1, 2, 3, 1 << 40] {
            for id in [MessageID.int(0), .int(1), .int(-1), .int(.max), .int(.min), .string(""), .string("1"), .string("a")] {
                let key = Key(connection: connection, id: id)
                table[key] = value
                expected.append((key, value))
                value += 1
            }
        }
        #expect(table.count == expected.count)
        for (key, value) in expected { #expect(table[key] == value) }
        table[Key(connection: 2, id: .int(1))] = nil
        #expect(table[Key(connection: 2, id: .int(1))] == nil)
        #expect(table[Key(connection: 1, id: .int(1))] != nil)
        #expect(table[Key(connection: 2, id: .string("1"))] != nil)
    }

    @Test func oneConnectionsIntegerIdsHashApart() {
        // Many consecutive ids and ids that differ in one bit: no two alike.
        var hashes = Set<Int>()
        let ids = Array(Int64(0)..<2000) + (0..<63).map { Int64(1) << $0 } + [-1, .min, .max]
        for id in ids { hashes.insert(Key(connection: 5, id: .int(id))._rawHashValue(seed: 99)) }
        #expect(hashes.count == Set(ids).count)
    }
}
