import Foundation
import MediatorProtocol
import Testing

extension Integration {
    /// Limits that need real sockets: the outbound queue of a peer that
    /// stops reading.
    @Suite("Limits")
    struct Limits {
        @Test("A peer that stops reading is disconnected at --max-outbound-bytes; others are served meanwhile")
        func stalledReaderIsDisconnected() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--max-outbound-bytes", "65536"])
            let stalled = try world.peer(daemon)
            _ = try stalled.result("mediator", "subscribe", params: ["events": ["bulk.*"]])
            let publisher = try world.peer(daemon)
            let bystander = try world.peer(daemon)
            let chunk = JSONValue.string(String(repeating: "x", count: 8192))

            // The stalled peer never reads again: the kernel's buffer fills,
            // then the daemon's queue, then the daemon hangs up on it.
            var deliveredCounts: [Int64] = []
            for _ in 0..<5000 {
                let reply = try publisher.result("mediator", "publish", params: ["event": "bulk.data", "data": chunk])
                let delivered = reply["delivered"]?.intValue ?? -1
                deliveredCounts.append(delivered)
                // Everyone else is answered at once all along.
                _ = try bystander.result("mediator", "ping", within: .seconds(2))
                if delivered == 0 { break }
            }
            #expect(deliveredCounts.first == 1)
            #expect(deliveredCounts.last == 0, "the stalled subscriber was never dropped")
            // Bounded: far less than the 40 MB the publisher could have queued.
            #expect(deliveredCounts.count < 1000, "dropped only after \(deliveredCounts.count) events")
        }
    }
}
