import MediatorProtocol

/// The targets of the run. Two kinds of component life: the run starts and
/// kills the first three itself; the daemon starts the last two from
/// manifests, and the run kills their processes.
enum ChaosTargets {
    /// A Swift component (`mediator-chaos component`), exclusive.
    static let swift = "ChaosSwift"
    /// A pool of Swift components.
    static let swiftPool = "ChaosPool"
    /// A pool of `Examples/python/notes_component.py`.
    static let notesPool = "NotesPool"
    /// Started on demand by the daemon; `restart: no`, so the next call starts it again.
    static let onDemand = "ChaosOnDemand"
    /// A pool of two the daemon starts and restarts (`restart: on-failure`).
    static let demandPool = "ChaosDemandPool"
    /// Nothing serves it and no manifest names it.
    static let missing = "NoSuchTarget"
}

/// One kind of call the clients make, with what may come back.
enum CallKind: String, CaseIterable, Comparable {
    case swiftEcho, swiftSlow, swiftStream, swiftFail, swiftURL, poolEcho
    case notesEcho, notesSleep, notesInvalid, notesFallback
    case demandEcho, demandStream, demandPoolSlow
    case ping, missingTarget, cancel, subscribe

    static func < (a: CallKind, b: CallKind) -> Bool { a.rawValue < b.rawValue }

    /// How often each kind is picked; `cancel` and `subscribe` are made on purpose, not drawn.
    static let weights: [(CallKind, Int)] = [
        (.swiftEcho, 10), (.swiftSlow, 8), (.swiftStream, 6), (.swiftFail, 3), (.swiftURL, 3), (.poolEcho, 6),
        (.notesEcho, 6), (.notesSleep, 6), (.notesInvalid, 2), (.notesFallback, 3),
        (.demandEcho, 8), (.demandStream, 5), (.demandPoolSlow, 8),
        (.ping, 4), (.missingTarget, 2),
    ]

    /// Calls that a `mediator/cancel` may be aimed at: they take a while.
    var isCancellable: Bool {
        switch self {
        case .swiftSlow, .swiftStream, .notesSleep, .demandStream, .demandPoolSlow: return true
        default: return false
        }
    }

    /// Error codes that may answer this kind besides the one it asks for:
    /// a component killed with the call in flight, not registered just now
    /// (self-started) or being started (from a manifest), or a timeout.
    var toleratedErrors: Set<String> {
        switch self {
        case .swiftEcho, .swiftSlow, .swiftStream, .swiftFail, .swiftURL, .poolEcho,
             .notesEcho, .notesSleep, .notesFallback:
            return ["component_unavailable", "target_not_found", "timeout"]
        case .notesInvalid:
            // Refused by the daemon's schema check, or nobody registered: never forwarded.
            return ["target_not_found"]
        case .demandEcho, .demandStream, .demandPoolSlow:
            // A manifest names them: never target_not_found.
            return ["component_unavailable", "timeout", "activation_failed"]
        case .ping, .missingTarget, .cancel, .subscribe:
            return []
        }
    }
}

/// A call as sent, and what its answer must look like.
struct PlannedCall {
    var kind: CallKind
    var target: String
    var action: String
    var params: JSONValue
    var timeoutMs: Int64?
    var more = false

    func request(id: Int64) -> JSONValue {
        var members: [String: JSONValue] = [
            "id": .int(id), "target": .string(target), "action": .string(action), "params": params,
        ]
        if let timeoutMs { members["timeout_ms"] = .int(timeoutMs) }
        if more { members["more"] = true }
        return .object(members)
    }
}

/// What the clients choose from; all randomness comes from the run's seeded generator.
struct CallMix {
    /// Timeout of calls sent without `timeout_ms` (the daemon's `--default-timeout-ms`).
    static let daemonDefaultTimeoutMs: Int64 = 4000
    /// The longest a call may take to get its final answer: the longest
    /// timeout, plus a whole stream (each partial restarts the timeout, and
    /// a stream lasts at most 8 × 100 ms).
    static let longestCallMs: Int64 = daemonDefaultTimeoutMs + 1000

    private let totalWeight = CallKind.weights.reduce(0) { $0 + $1.1 }

    func draw(using rng: inout SeededGenerator) -> CallKind {
        var pick = Int.random(in: 0..<totalWeight, using: &rng)
        for (kind, weight) in CallKind.weights {
            if pick < weight { return kind }
            pick -= weight
        }
        return .ping
    }

    /// Builds a call of `kind`; `client` and `id` go into the params so that
    /// an answer delivered to the wrong call shows.
    func plan(_ kind: CallKind, client: Int, id: Int64, using rng: inout SeededGenerator) -> PlannedCall {
        let tag: JSONValue = ["c": .int(Int64(client)), "n": .int(id)]
        // A quarter of the calls leave the timeout to the daemon's default.
        func someTimeout() -> Int64? {
            Int.random(in: 0..<4, using: &rng) == 0 ? nil : Int64.random(in: 2000...3000, using: &rng)
        }
        // Sleeps that outlast their timeout about half the time.
        func sleepAndTimeout() -> (Int64, Int64) {
            (Int64.random(in: 20...600, using: &rng), Int64.random(in: 100...700, using: &rng))
        }
        func stream(_ target: String) -> PlannedCall {
            let params: JSONValue = [
                "c": .int(Int64(client)), "n": .int(id),
                "count": .int(Int64.random(in: 1...8, using: &rng)),
                "interval_ms": .int(Int64.random(in: 10...100, using: &rng)),
            ]
            return PlannedCall(kind: kind, target: target, action: "stream", params: params, timeoutMs: someTimeout(), more: true)
        }
        switch kind {
        case .swiftEcho:
            return PlannedCall(kind: kind, target: ChaosTargets.swift, action: "echo", params: tag, timeoutMs: someTimeout())
        case .swiftSlow:
            let (ms, timeout) = sleepAndTimeout()
            return PlannedCall(kind: kind, target: ChaosTargets.swift, action: "slow", params: ["ms": .int(ms), "n": .int(id)], timeoutMs: timeout)
        case .swiftStream:
            return stream(ChaosTargets.swift)
        case .swiftFail:
            return PlannedCall(kind: kind, target: ChaosTargets.swift, action: "fail", params: ["code": "chaos_failure"], timeoutMs: someTimeout())
        case .swiftURL:
            return PlannedCall(
                kind: kind, target: "mediator", action: "open",
                params: ["url": .string("chaos://\(ChaosTargets.swift)/echo?c=\(client)&n=\(id)")], timeoutMs: someTimeout())
        case .poolEcho:
            return PlannedCall(kind: kind, target: ChaosTargets.swiftPool, action: "echo", params: tag, timeoutMs: someTimeout())
        case .notesEcho:
            return PlannedCall(kind: kind, target: ChaosTargets.notesPool, action: "echo", params: tag, timeoutMs: someTimeout())
        case .notesSleep:
            let (ms, timeout) = sleepAndTimeout()
            return PlannedCall(kind: kind, target: ChaosTargets.notesPool, action: "sleep", params: ["ms": .int(ms)], timeoutMs: timeout)
        case .notesInvalid:
            // `add` declares a schema with `text` required: the daemon refuses this.
            return PlannedCall(kind: kind, target: ChaosTargets.notesPool, action: "add", params: ["tags": ["x"]], timeoutMs: someTimeout())
        case .notesFallback:
            return PlannedCall(kind: kind, target: ChaosTargets.notesPool, action: "chaosUndeclared", params: tag, timeoutMs: someTimeout())
        case .demandEcho:
            return PlannedCall(kind: kind, target: ChaosTargets.onDemand, action: "echo", params: tag, timeoutMs: someTimeout())
        case .demandStream:
            return stream(ChaosTargets.onDemand)
        case .demandPoolSlow:
            let (ms, timeout) = sleepAndTimeout()
            return PlannedCall(kind: kind, target: ChaosTargets.demandPool, action: "slow", params: ["ms": .int(ms), "n": .int(id)], timeoutMs: timeout)
        case .ping:
            return PlannedCall(kind: kind, target: "mediator", action: "ping", params: [:], timeoutMs: nil)
        case .missingTarget:
            return PlannedCall(kind: kind, target: ChaosTargets.missing, action: "echo", params: tag, timeoutMs: someTimeout())
        case .cancel, .subscribe:
            // Built by the client, which knows the call to cancel.
            return PlannedCall(kind: kind, target: "mediator", action: "ping", params: [:], timeoutMs: nil)
        }
    }
}

/// The final answer to a call.
enum FinalAnswer {
    case result(JSONValue)
    case error(code: String, message: String)
}

/// Judges a final answer against its call; nil when it is acceptable, else
/// what is wrong.
enum AnswerCheck {
    static func problem(
        _ answer: FinalAnswer, call: PlannedCall, partials: Int, cancelAsked: Bool, ourPID: Int64, ourUID: Int64
    ) -> String? {
        switch answer {
        case .error(let code, let message):
            if call.kind == .swiftFail && code == "chaos_failure" { return nil }
            if call.kind == .notesInvalid && code == "invalid_params" { return nil }
            if call.kind == .missingTarget && code == "target_not_found" { return nil }
            if code == "cancelled" && cancelAsked { return nil }
            if call.kind.toleratedErrors.contains(code) { return nil }
            return "unexpected error \(code) (\(message))"
        case .result(let result):
            return resultProblem(result, call: call, partials: partials, ourPID: ourPID, ourUID: ourUID)
        }
    }

    private static func resultProblem(
        _ result: JSONValue, call: PlannedCall, partials: Int, ourPID: Int64, ourUID: Int64
    ) -> String? {
        let params = call.params
        let good: Bool
        switch call.kind {
        case .swiftEcho, .poolEcho, .demandEcho:
            good = result == params
        case .swiftURL:
            // URL query items arrive as strings.
            guard let url = params["url"]?.stringValue, let query = url.split(separator: "?").last else { return "bad plan" }
            var expected: [String: JSONValue] = [:]
            for item in query.split(separator: "&") {
                let pair = item.split(separator: "=", maxSplits: 1)
                if pair.count == 2 { expected[String(pair[0])] = .string(String(pair[1])) }
            }
            good = result == .object(expected)
        case .swiftSlow, .notesSleep, .demandPoolSlow:
            good = result["slept"] != nil && result["slept"] == params["ms"]
        case .swiftStream, .demandStream:
            good = result["done"] == .bool(true) && result["count"] == params["count"]
                && Int64(partials) == params["count"]?.intValue
        case .notesEcho:
            good = result["c"] == params["c"] && result["n"] == params["n"]
                && result["caller"]?["pid"]?.intValue == ourPID && result["caller"]?["uid"]?.intValue == ourUID
        case .notesFallback:
            good = result["fallback"] == "chaosUndeclared" && result["params"] == params
        case .ping, .cancel, .subscribe:
            good = result == .object([:])
        case .swiftFail, .notesInvalid, .missingTarget:
            good = false
        }
        if good { return nil }
        return "wrong result \(result.jsonText) for \(call.target)/\(call.action) \(params.jsonText) after \(partials) partial(s)"
    }
}
