import Foundation
import MediatorProtocol
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Integration {
    /// Timeouts, cancellation and the `mediator.cancel` event, seen from a
    /// raw component that records what it receives.
    @Suite("Timeouts and cancellation")
    struct Cancellation {
        @Test("A call times out: the caller gets timeout, the component mediator.cancel for its id, a late reply is dropped")
        func timeoutSendsCancelEvent() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try world.peer(daemon)
            _ = try component.register("Hang", actions: ["wait"])
            let caller = try world.peer(daemon)

            let started = ContinuousClock.now
            try caller.request("Hang", "wait", params: ["k": "v"], id: "t-1", timeoutMs: 300)
            let forwarded = try component.incomingRequest()
            let daemonID = try #require(forwarded["id"])
            #expect(forwarded["params"] == ["k": "v"])
            let remaining = try #require(forwarded["timeout_ms"]?.intValue, "\(forwarded.jsonText)")
            #expect(remaining > 0 && remaining <= 300)

            let reply = try caller.response(to: "t-1")
            let elapsed = ContinuousClock.now - started
            #expect(reply.errorCode == "timeout", "\(reply.jsonText)")
            #expect(elapsed >= .milliseconds(290), "timed out after \(elapsed)")

            let cancel = try component.event("mediator.cancel")
            #expect(cancel["data"]?["id"] == daemonID, "cancel \(cancel.jsonText) for request \(forwarded.jsonText)")

            // The late reply goes nowhere; both connections keep working.
            try component.reply(to: forwarded, result: "too late")
            try caller.expectNothingPendingBeforePing()
            try component.expectNothingPendingBeforePing()
        }

        @Test("The daemon's default timeout applies without timeout_ms")
        func defaultTimeout() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--default-timeout-ms", "200"])
            let component = try world.peer(daemon)
            _ = try component.register("Hang", actions: ["wait"])
            let caller = try world.peer(daemon)
            let id = try caller.request("Hang", "wait")
            let forwarded = try component.incomingRequest()
            #expect(try caller.response(to: id).errorCode == "timeout")
            #expect(try component.event("mediator.cancel")["data"]?["id"] == forwarded["id"])
        }

        @Test("mediator/cancel answers the call with cancelled and tells the component")
        func callerCancels() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try world.peer(daemon)
            _ = try component.register("Hang", actions: ["wait"])
            let caller = try world.peer(daemon)

            try caller.request("Hang", "wait", id: 5)
            let forwarded = try component.incomingRequest()
            let cancelReply = try caller.call("mediator", "cancel", params: ["id": 5])
            #expect(cancelReply["result"] == [:], "\(cancelReply.jsonText)")
            #expect(try caller.response(to: 5).errorCode == "cancelled")
            #expect(try component.event("mediator.cancel")["data"]?["id"] == forwarded["id"])
            // An id no longer in flight: still {}.
            #expect(try caller.result("mediator", "cancel", params: ["id": 5]) == [:])
        }

        @Test("A caller that disconnects cancels its calls in flight")
        func callerDisconnectCancels() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let component = try world.peer(daemon)
            _ = try component.register("Hang", actions: ["wait"])
            let caller = try daemon.connect()
            try caller.request("Hang", "wait", id: 1)
            let forwarded = try component.incomingRequest()
            caller.close()
            #expect(try component.event("mediator.cancel")["data"]?["id"] == forwarded["id"])
        }

        @Test("The Python component stops a cancelled sleep and sends nothing for it")
        func pythonSleepCancelled() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            _ = try world.notes(daemon)
            let peer = try world.peer(daemon)
            let reply = try peer.call("Notes", "sleep", params: ["ms": 30_000], timeoutMs: 200)
            #expect(reply.errorCode == "timeout", "\(reply.jsonText)")
            // The component is still fine and answers the next call.
            #expect(try peer.result("Notes", "whoami")["pid"] != nil)
        }

        @Test("A component killed with SIGKILL: all 5 callers get component_unavailable within 1 s")
        func killedComponent() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon()
            let notes = try world.notes(daemon)
            let callers = try (0..<5).map { _ in try world.peer(daemon) }
            for caller in callers {
                try caller.request("Notes", "sleep", params: ["ms": 60_000], id: "slow")
                // The daemon reads a connection in order: once the ping is
                // answered, the sleep before it is in flight.
                try caller.expectNothingPendingBeforePing()
            }
            if let inFlight = try daemon.listing("Notes")?["instances"]?[0]?["in_flight"]?.intValue {
                #expect(inFlight == 5)  // mediatord's extension to list
            }

            let killed = ContinuousClock.now
            notes.signal(SIGKILL)
            let outcomes = try onThreads(callers.count, within: .seconds(20)) { index in
                let reply = try callers[index].response(to: "slow", within: .seconds(10))
                return (reply.errorCode, ContinuousClock.now - killed)
            }
            for (code, elapsed) in outcomes {
                #expect(code == "component_unavailable")
                #expect(elapsed < .seconds(1), "answered \(elapsed) after the kill")
            }
            try daemon.waitForTargetGone("Notes")
            #expect(try callers[0].call("Notes", "whoami").errorCode == "target_not_found")
        }
    }
}

extension JSONValue {
    subscript(index: Int) -> JSONValue? {
        guard let items = arrayValue, items.indices.contains(index) else { return nil }
        return items[index]
    }
}
