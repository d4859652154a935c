import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

@Suite("CallsInFlight")
struct CallsInFlightTests {
    func deadline(_ ms: Int64) -> NIODeadline { .uptimeNanoseconds(1_000_000_000 + UInt64(ms) * 1_000_000) }

    func call(_ p: inout CallsInFlight, caller: ConnectionID, id: MessageID, callee: ConnectionID, at ms: Int64) -> Int64 {
        let daemonID = p.makeDaemonID()
        var idBytes = ByteBufferAllocator().buffer(capacity: 8)
        idBytes.writeBytes(id.json.encoded)
        p.insert(CallsInFlight.Call(
            daemonID: daemonID, caller: caller, callerID: id, callerIDBytes: idBytes, callee: callee, target: "T",
            action: "a", instance: 1, more: false, timeoutMs: ms, deadline: deadline(ms), startedAt: deadline(0)))
        return daemonID
    }

    @Test func daemonIDsIncrease() {
        var p = CallsInFlight()
        #expect((0..<4).map { _ in p.makeDaemonID() } == [1, 2, 3, 4])
    }

    @Test func indexesByCallerAndCallee() {
        var p = CallsInFlight()
        let a = call(&p, caller: 1, id: .int(1), callee: 2, at: 300)
        let b = call(&p, caller: 1, id: .string("1"), callee: 3, at: 100)
        let c = call(&p, caller: 4, id: .int(1), callee: 2, at: 200)
        #expect(p.count == 3)
        #expect(p.isInFlight(caller: 1, id: .int(1)))
        #expect(p.isInFlight(caller: 1, id: .string("1")))
        #expect(!p.isInFlight(caller: 1, id: .int(2)))
        #expect(!p.isInFlight(caller: 2, id: .int(1)))
        #expect(p.daemonID(caller: 4, id: .int(1)) == c)
        #expect(p.callsInFlight(of: 1) == 2)
        #expect(p.callsInFlight(of: 4) == 1)
        #expect(p.callsInFlight(of: 2) == 0)
        #expect(p.calls(toCallee: 2).map(\.daemonID) == [a, c])
        #expect(p.calls(toCallee: 3).map(\.daemonID) == [b])
        #expect(p.calls(fromCaller: 1).map(\.daemonID) == [a, b])
        #expect(p.call(b)?.callerID == .string("1"))
        #expect(p.all.map(\.daemonID) == [a, b, c])

        #expect(p.remove(a)?.daemonID == a)
        #expect(p.remove(a) == nil)
        #expect(!p.isInFlight(caller: 1, id: .int(1)))
        #expect(p.callsInFlight(of: 1) == 1)
        #expect(p.calls(toCallee: 2).map(\.daemonID) == [c])
        #expect(p.count == 2)
        p.remove(b)
        p.remove(c)
        #expect(p.count == 0)
        #expect(p.callsInFlight(of: 1) == 0)
        #expect(p.calls(toCallee: 2).isEmpty)
        #expect(p.earliestDeadline == nil)
    }

    @Test func expiryAndDeadlines() {
        var p = CallsInFlight()
        let a = call(&p, caller: 1, id: .int(1), callee: 2, at: 300)
        let b = call(&p, caller: 1, id: .int(2), callee: 2, at: 100)
        let c = call(&p, caller: 1, id: .int(3), callee: 2, at: 100)
        #expect(p.earliestDeadline == deadline(100))
        #expect(p.expired(at: deadline(99)).isEmpty)
        #expect(p.expired(at: deadline(100)).map(\.daemonID) == [b, c])
        #expect(p.expired(at: deadline(1000)).map(\.daemonID) == [a, b, c])
        p.setDeadline(b, deadline(500))
        p.setDeadline(c, deadline(400))
        #expect(p.earliestDeadline == deadline(300))
        #expect(p.expired(at: deadline(450)).map(\.daemonID) == [a, c])
        #expect(p.call(b)?.deadline == deadline(500))
        // Setting the deadline of a gone call does nothing.
        p.setDeadline(99, deadline(1))
        #expect(p.earliestDeadline == deadline(300))
    }
}
