import MediatorConfiguration
import MediatorProtocol
import NIOCore
import Testing

@testable import MediatorDaemon

/// A broker driven into a rich state, and a second one restored from its
/// snapshot, for the snapshot suites.
///
/// Connections: 1 calls; 2 and 3 serve the pool `Calc`; 4 serves `Feed`
/// (exclusive, a result schema, streams); 5 subscribes to `news.*`; 6
/// monitors `Feed` and `news.*`.
enum SnapshotScenario {
    /// The original broker in its rich state, its clock 1,234 ms after its start.
    static func richBroker() -> BrokerDriver {
        let d = BrokerDriver()
        d.broker.statisticsStart = d.start
        for connection in 1...6 { d.connect(connection) }
        _ = d.daemon("hello", #"{"protocol":1,"name":"adder-two"}"#, from: 2)
        d.register("Calc", actions: #"["add","mul"]"#, mode: "pool", description: "sums", from: 2)
        d.register("Calc", actions: #"["mul","add"]"#, mode: "pool", description: "sums", from: 3)
        d.register("Feed", actions: #"[{"name":"watch","more":true,"result":{"type":"object"}},"get"]"#, from: 4)
        d.subscribe(["news.*", "mediator.unregistered"], from: 5)
        _ = d.daemon("monitor", #"{"targets":["Feed"],"events":["news.*"]}"#, from: 6)
        // Some history for the statistics: two calls answered, one refused.
        d.send(#"{"id":"h1","target":"Calc","action":"add","params":{"a":1}}"#, from: 1)
        d.send(#"{"id":1,"result":1}"#, from: 2)
        d.send(#"{"id":"h2","target":"Calc","action":"add"}"#, from: 1)
        d.send(#"{"id":2,"error":{"code":"bad_numbers","message":"no"}}"#, from: 3)
        d.send(#"{"id":"h3","target":"Nope","action":"x"}"#, from: 1)
        d.advance(ms: 1_000)
        // In flight: one call on each pool member, a stream with a partial, a plain call.
        d.send(#"{"id":"c1","target":"Calc","action":"add","timeout_ms":3000}"#, from: 1)
        d.send(#"{"id":7,"target":"Calc","action":"mul","timeout_ms":9000}"#, from: 1)
        d.send(#"{"id":"s","target":"Feed","action":"watch","more":true,"timeout_ms":2000}"#, from: 1)
        d.advance(ms: 234)
        d.send(#"{"id":5,"result":{"n":1},"continues":true}"#, from: 4)
        d.send(#"{"id":"g","target":"Feed","action":"get","timeout_ms":500}"#, from: 1)
        // One more pool call, answered: both members are left with one call
        // each and the turn at the second (3), not where a fresh pool starts.
        d.send(#"{"id":"p","target":"Calc","action":"add"}"#, from: 1)
        d.send(#"{"id":7,"result":0}"#, from: 2)
        for connection in 1...6 { _ = d.take(connection) }
        return d
    }

    /// A broker restored from `snapshot` (after a trip through its encoding)
    /// in a process whose clock reads something else entirely.
    static func restored(from snapshot: BrokerSnapshot, configuration: DaemonConfiguration = DaemonConfiguration())
        throws -> BrokerDriver
    {
        let decoded = try BrokerSnapshot.decode(snapshot.encoded())
        let broker = Broker(configuration: configuration, version: "9.8.7-test", logger: .init(label: "mediator-daemon-tests"))
        broker.logger.logLevel = .critical
        broker.loadPolicy(Policy(rules: [Policy.Rule(match: .everyone, allow: .everything)]))
        let start = NIODeadline.uptimeNanoseconds(90_000_000_000)
        let now = start + .milliseconds(5)
        let d = BrokerDriver(broker: broker, start: start, now: now)
        d.apply(try broker.restore(decoded, now: now))
        return d
    }

    /// What happens next, the same on either broker: every line each
    /// connection receives, in order, and the wake-ups asked for (relative
    /// to the clock when the script starts).
    static func continuation(_ d: BrokerDriver) -> [String] {
        var transcript: [String] = []
        let began = d.now
        func collect(_ step: String) {
            transcript.append("-- " + step)
            for connection in 1...6 {
                for line in d.take(connection) { transcript.append("\(connection): \(withoutTimes(line))") }
            }
        }
        let wakeUpsBefore = d.wakeUps.count
        // A response to a call in flight reaches its caller with its id.
        d.send(#"{"id":3,"result":{"sum":3}}"#, from: 2)
        collect("pool answer")
        // An id still in flight is refused; a call in flight can be cancelled.
        d.send(#"{"id":7,"target":"Calc","action":"add"}"#, from: 1)
        collect("duplicate id")
        d.send(#"{"id":"k","target":"mediator","action":"cancel","params":{"id":7}}"#, from: 1)
        collect("cancel")
        // The stream goes on and ends.
        d.send(#"{"id":5,"result":{"n":2},"continues":true}"#, from: 4)
        d.send(#"{"id":5,"result":"not an object"}"#, from: 4)
        collect("stream")
        // Round robin goes on where it was, and new calls get the next ids.
        for index in 1...3 {
            d.send(#"{"id":"rr\#(index)","target":"Calc","action":"add"}"#, from: 1)
        }
        collect("round robin")
        // An event reaches its subscribers and the monitor.
        d.send(#"{"event":"news.today","data":{"x":1}}"#, from: 3)
        collect("event")
        // The deadlines: `g` had 500 ms left, `c1` 2,766.
        d.advance(ms: 499)
        d.expire()
        collect("before g's deadline")
        d.advance(ms: 1)
        d.expire()
        collect("g's deadline")
        d.advance(ms: 2_266)
        d.expire()
        collect("c1's deadline")
        // A component leaves: its calls in flight fail, subscribers hear it.
        d.disconnect(3)
        collect("3 leaves")
        for target in ["Calc", "Feed"] {
            d.send(#"{"id":"list","target":"mediator","action":"list","params":{"target":"\#(target)"}}"#, from: 1)
            collect("list \(target)")
        }
        d.send(#"{"id":"stats","target":"mediator","action":"stats","params":{"slow":false}}"#, from: 1)
        collect("stats")
        // The caller leaves: its components hear that its calls are cancelled.
        d.disconnect(1)
        collect("1 leaves")
        transcript += d.wakeUps.dropFirst(wakeUpsBefore).map { "wake-up at +\(($0 - began).nanoseconds / 1_000_000) ms" }
        return transcript
    }

    /// A line without what depends on the process rather than the state:
    /// latencies (a restored broker's histograms start afresh).
    static func withoutTimes(_ line: String) -> String {
        guard let value = try? JSONParser.parse(line) else { return line }
        return String(decoding: strippingLatencies(value).encoded, as: UTF8.self)
    }

    private static func strippingLatencies(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            var kept: [String: JSONValue] = [:]
            for (key, member) in members where !key.contains("latency") { kept[key] = strippingLatencies(member) }
            return .object(kept)
        case .array(let items): return .array(items.map(strippingLatencies))
        default: return value
        }
    }
}
