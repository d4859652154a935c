import Foundation
import MediatorProtocol
import Testing

extension Integration {
    /// A stream whose caller reads more slowly than the component sends
    /// (issue 23, point 5): the daemon ends the stream instead of growing
    /// the caller's queue until it disconnects the caller.
    @Suite("Streams faster than their caller")
    struct StreamBacklogTests {
        @Test("Partials past half of max_outbound_bytes queued toward the caller: the caller gets overloaded and stays connected; the component gets mediator.cancel")
        func aStreamFasterThanItsCallerIsEnded() throws {
            let world = try World()
            defer { world.close() }
            let daemon = try world.daemon(["--max-outbound-bytes", "4194304"])
            let component = try world.peer(daemon)
            _ = try component.register("Fast", actions: ["stream"])
            let caller = try world.peer(daemon)
            let id = try caller.request("Fast", "stream", params: [:], more: true)
            let request = try component.receive { $0["action"] == "stream" }
            // 8 MiB of partials to a caller that reads none of them yet: twice what the daemon would queue before disconnecting it.
            let chunk = JSONValue.string(String(repeating: "p", count: 8192))
            for _ in 0..<1024 {
                try component.send(["id": request["id"] ?? .null, "result": chunk, "continues": true])
            }
            let cancel = try component.receive(within: .seconds(10)) { $0["event"] == "mediator.cancel" }
            #expect(cancel["data"]?["id"] == request["id"], "\(cancel)")
            // The caller reads: what was queued, then overloaded as the final answer.
            var partials = 0
            var final: JSONValue = .null
            while true {
                let message = try caller.response(to: id, within: .seconds(10))
                if message["continues"] == true { partials += 1 } else { final = message; break }
            }
            #expect(final["error"]?["code"] == "overloaded", "\(final)")
            #expect(final["error"]?["message"]?.stringValue?.contains("faster than the caller reads them") == true, "\(final)")
            #expect(partials > 0 && partials < 1024, "\(partials)")
            #expect(try caller.result("mediator", "ping") == [:])
        }
    }
}
