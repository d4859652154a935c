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
    /// A pool that the pool probe's raw connections join (twice each), and nobody calls.
    static let poolProbe = "ChaosPoolProbe"
    /// A pool of `Tests/Chaos/fds_component.py`, which passes descriptors (issue 26).
    static let fds = "ChaosFds"
}

/// One kind of call the clients make, with what may come back.
enum CallKind: String, CaseIterable, Comparable {
    case swiftEcho, swiftSlow, swiftStream, swiftFail, swiftURL, poolEcho
    case notesEcho, notesSleep, notesInvalid, notesFallback
    case demandEcho, demandStream, demandPoolSlow
    case ping, missingTarget, cancel, subscribe
    /// Calls with a descriptor (contract section 8), to `ChaosFds`: read it
    /// and get a copy back; a stream whose partials carry descriptors; a
    /// sleep that holds it; and refused ones: to a target nobody serves, and
    /// declaring two descriptors with one sent (`bad_request`).
    case fdsRead, fdsStream, fdsSleep, fdsMissingTarget, fdsMismatch
    /// `mediator/open` of a URL that reaches `mediator/open` again, nested 1-64 deep (now and then ~2,000).
    case nestedOpen
    /// A call held while `ChaosOnDemand` is being started, then sent again with the same id.
    case heldDuplicate
    /// A call held while `ChaosOnDemand` is being started, then cancelled.
    case heldCancel

    static func < (a: CallKind, b: CallKind) -> Bool { a.rawValue < b.rawValue }

    /// How often each kind is picked; `cancel`, `subscribe` and the held-call
    /// probes are made on purpose, not drawn.
    static let weights: [(CallKind, Int)] = [
        (.swiftEcho, 10), (.swiftSlow, 8), (.swiftStream, 6), (.swiftFail, 3), (.swiftURL, 3), (.poolEcho, 6),
        (.notesEcho, 6), (.notesSleep, 6), (.notesInvalid, 2), (.notesFallback, 3),
        (.demandEcho, 8), (.demandStream, 5), (.demandPoolSlow, 8),
        (.ping, 4), (.missingTarget, 2), (.nestedOpen, 2),
        (.fdsRead, 5), (.fdsStream, 3), (.fdsSleep, 4), (.fdsMissingTarget, 1), (.fdsMismatch, 1),
    ]

    /// Calls that a `mediator/cancel` may be aimed at: they take a while.
    var isCancellable: Bool {
        switch self {
        case .swiftSlow, .swiftStream, .notesSleep, .demandStream, .demandPoolSlow, .fdsStream, .fdsSleep: return true
        default: return false
        }
    }

    /// Error codes that may answer this kind besides the one it asks for:
    /// a component killed with the call in flight, not registered just now
    /// (self-started) or being started (from a manifest), or a timeout.
    var toleratedErrors: Set<String> {
        switch self {
        case .swiftEcho, .swiftSlow, .swiftStream, .swiftFail, .swiftURL, .poolEcho,
             .notesEcho, .notesSleep, .notesFallback, .fdsRead, .fdsStream, .fdsSleep:
            return ["component_unavailable", "target_not_found", "timeout"]
        case .notesInvalid:
            // Refused by the daemon's schema check, or nobody registered: never forwarded.
            return ["target_not_found"]
        case .demandEcho, .demandStream, .demandPoolSlow, .heldDuplicate:
            // A manifest names them: never target_not_found.
            return ["component_unavailable", "timeout", "activation_failed"]
        case .ping, .missingTarget, .cancel, .subscribe, .fdsMissingTarget, .fdsMismatch:
            return []
        case .nestedOpen:
            // Refused before anything is routed: nothing else may answer it.
            return []
        case .heldCancel:
            // Cancelled while held (or just forwarded): `cancelled`, and nothing else.
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
    /// For `nestedOpen`: how many `mediator/open` URLs are nested inside the call.
    var nesting = 0
    /// What each descriptor sent with the call holds (a memfd each), in order.
    var descriptors: [String] = []
    /// The `fds` the request declares, when not the number sent (`fdsMismatch`).
    var declaredFds: Int?

    func request(id: Int64) -> JSONValue {
        var members: [String: JSONValue] = [
            "id": .int(id), "target": .string(target), "action": .string(action), "params": params,
        ]
        if let timeoutMs { members["timeout_ms"] = .int(timeoutMs) }
        if more { members["more"] = true }
        let fds = declaredFds ?? descriptors.count
        if fds > 0 { members["fds"] = .int(Int64(fds)) }
        return .object(members)
    }

    /// What the descriptor of an `fds` call holds: its client and id, so that
    /// a descriptor delivered with the wrong call shows.
    static func descriptorTag(client: Int, id: Int64) -> String { "chaos c\(client) n\(id)" }
}

/// What the clients choose from; all randomness comes from the run's seeded generator.
struct CallMix {
    /// Timeout of calls sent without `timeout_ms` (the daemon's `--default-timeout-ms`).
    static let daemonDefaultTimeoutMs: Int64 = 4000
    /// The longest a call may take to get its final answer: the longest
    /// timeout, plus a whole stream (each partial restarts the timeout, and
    /// a stream lasts at most 8 × 100 ms).
    static let longestCallMs: Int64 = daemonDefaultTimeoutMs + 1000

    /// Depths of the usual nested opens, and of the rare deep ones (whose
    /// URL, about 27 bytes a level, stays far below the 1 MiB frame limit).
    static let nesting: ClosedRange<Int> = 1...64
    static let deepNesting: ClosedRange<Int> = 1900...2100
    static let deepNestingOneIn = 32
    /// A nested open this deep or deeper counts as a deep one in the tally.
    static var deepNestingCounted: Int { deepNesting.lowerBound }

    /// The kinds the run leaves out (`--skip-probe`), so that it can be run
    /// against a daemon without the fixes they check.
    var skipped: Set<CallKind> = []

    private var totalWeight: Int { CallKind.weights.filter { !skipped.contains($0.0) }.reduce(0) { $0 + $1.1 } }

    func draw(using rng: inout SeededGenerator) -> CallKind {
        var pick = Int.random(in: 0..<totalWeight, using: &rng)
        for (kind, weight) in CallKind.weights where !skipped.contains(kind) {
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
        case .nestedOpen:
            let leaf = "chaos://\(ChaosTargets.swift)/echo?c=\(client)&n=\(id)"
            let deep = Int.random(in: 0..<Self.deepNestingOneIn, using: &rng) == 0
            let depth = deep ? Int.random(in: Self.deepNesting, using: &rng) : Int.random(in: Self.nesting, using: &rng)
            let url = NestedOpenURL.make(depth: depth, leaf: leaf, using: &rng)
            var call = PlannedCall(kind: kind, target: "mediator", action: "open", params: ["url": .string(url)], timeoutMs: someTimeout())
            call.nesting = depth
            return call
        case .heldDuplicate:
            // Slow, so that were the duplicate (an `echo`) served as well, its answer would come first and show.
            return PlannedCall(kind: kind, target: ChaosTargets.onDemand, action: "slow", params: ["ms": 200, "n": .int(id)], timeoutMs: 3000)
        case .heldCancel:
            // Far longer than the cancel takes to follow it.
            return PlannedCall(kind: kind, target: ChaosTargets.onDemand, action: "slow", params: ["ms": 1500, "n": .int(id)], timeoutMs: 3000)
        case .fdsRead, .fdsStream, .fdsSleep, .fdsMissingTarget, .fdsMismatch:
            var call: PlannedCall
            switch kind {
            case .fdsStream:
                call = stream(ChaosTargets.fds)
            case .fdsSleep:
                let (ms, timeout) = sleepAndTimeout()
                call = PlannedCall(kind: kind, target: ChaosTargets.fds, action: "sleep", params: ["ms": .int(ms)], timeoutMs: timeout)
            case .fdsMissingTarget:
                call = PlannedCall(kind: kind, target: ChaosTargets.missing, action: "read", params: tag, timeoutMs: someTimeout())
            default:
                call = PlannedCall(kind: kind, target: ChaosTargets.fds, action: "read", params: tag, timeoutMs: someTimeout())
            }
            var params = call.params.objectValue ?? [:]
            params["f"] = ["$fd": 0]
            call.params = .object(params)
            call.descriptors = [PlannedCall.descriptorTag(client: client, id: id)]
            if kind == .fdsMismatch { call.declaredFds = 2 }
            return call
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
    /// `received` holds what each descriptor of the final answer held, in order.
    static func problem(
        _ answer: FinalAnswer, call: PlannedCall, partials: Int, cancelAsked: Bool, ourPID: Int64, ourUID: Int64,
        received: [String?] = []
    ) -> String? {
        switch answer {
        case .error(let code, let message):
            if call.kind == .fdsMissingTarget && code == "target_not_found" { return nil }
            if call.kind == .fdsMismatch && code == "bad_request" { return nil }
            if call.kind == .swiftFail && code == "chaos_failure" { return nil }
            if call.kind == .notesInvalid && code == "invalid_params" { return nil }
            if call.kind == .missingTarget && code == "target_not_found" { return nil }
            if call.kind == .nestedOpen && code == "forbidden" { return nil }
            if code == "cancelled" && cancelAsked { return nil }
            if call.kind.toleratedErrors.contains(code) { return nil }
            return "unexpected error \(code) (\(message.prefix(300)))"
        case .result(let result):
            if call.kind == .fdsRead {
                // The component read the descriptor sent, and its own came back holding the same.
                let tag = call.descriptors.first.map { JSONValue.string($0) }
                guard result["content"] == tag, result["copy"] == ["$fd": 0], received == [call.descriptors.first] else {
                    return "wrong result \(result.jsonText) with descriptors holding \(received) for fdsRead of \(call.descriptors)"
                }
                return nil
            }
            guard received.isEmpty else { return "descriptors \(received) with the result of \(call.kind)" }
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
        case .swiftSlow, .notesSleep, .demandPoolSlow, .fdsSleep:
            good = result["slept"] != nil && result["slept"] == params["ms"]
        case .swiftStream, .demandStream:
            good = result["done"] == .bool(true) && result["count"] == params["count"]
                && Int64(partials) == params["count"]?.intValue
        case .fdsStream:
            good = result["done"] == .bool(true) && result["count"] == params["count"]
                && Int64(partials) == params["count"]?.intValue && result["content"] == call.descriptors.first.map { .string($0) }
        case .notesEcho:
            good = result["c"] == params["c"] && result["n"] == params["n"]
                && result["caller"]?["pid"]?.intValue == ourPID && result["caller"]?["uid"]?.intValue == ourUID
        case .notesFallback:
            good = result["fallback"] == "chaosUndeclared" && result["params"] == params
        case .ping, .cancel, .subscribe:
            good = result == .object([:])
        case .heldDuplicate:
            // The first call's answer; an echo of the duplicate's params would mean it was served.
            good = result["slept"] != nil && result["slept"] == params["ms"]
        case .swiftFail, .notesInvalid, .missingTarget, .nestedOpen, .heldCancel, .fdsRead, .fdsMissingTarget, .fdsMismatch:
            good = false
        }
        if good { return nil }
        if call.kind == .nestedOpen {
            // Its URL runs to tens of kilobytes: the depth says enough.
            return "wrong result \(result.jsonText.prefix(200)) for mediator/open nested \(call.nesting) deep (forbidden expected)"
        }
        return "wrong result \(result.jsonText) for \(call.target)/\(call.action) \(params.jsonText) after \(partials) partial(s)"
    }
}

/// URLs for `mediator/open` that reach `mediator/open` again, `depth` times,
/// around a `leaf` URL: what crashed the daemon by recursion (issue 10).
enum NestedOpenURL {
    /// Each level is `SCHEME://mediator/open?url=` and the level inside it,
    /// escaped: in full (every byte but the unreserved ones, as a browser
    /// would; the URL grows with the square of the depth) up to 64 deep, or
    /// else only where the query needs it (`%`, `&`, `#`; it grows linearly).
    /// Schemes vary and some levels say `open/`: a fix must look at what a URL
    /// routes to, not compare text.
    static func make(depth: Int, leaf: String, using rng: inout SeededGenerator) -> String {
        let fullEscapes = depth <= 64 && Bool.random(using: &rng)
        var url = leaf
        for _ in 0..<depth {
            let scheme = ["app", "chaos", "X-Mediator"].randomElement(using: &rng) ?? "app"
            let action = Int.random(in: 0..<4, using: &rng) == 0 ? "open/" : "open"
            url = "\(scheme)://mediator/\(action)?url=" + escape(url, full: fullEscapes)
        }
        return url
    }

    static func escape(_ text: String, full: Bool) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var escaped: [UInt8] = []
        escaped.reserveCapacity(text.utf8.count * (full ? 3 : 1))
        for byte in text.utf8 {
            let unreserved = (byte >= 0x30 && byte <= 0x39) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
            let needed = byte == UInt8(ascii: "%") || byte == UInt8(ascii: "&") || byte == UInt8(ascii: "#")
            if full ? !unreserved : needed {
                escaped += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            } else {
                escaped.append(byte)
            }
        }
        return String(decoding: escaped, as: UTF8.self)
    }
}
