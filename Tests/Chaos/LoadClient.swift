import MediatorProtocol
import MediatorSocket

/// One of the run's clients: a raw connection that keeps `depth` calls in
/// flight with ids of its own (1, 2, 3...), never reused, and checks every
/// line it receives: exactly one final response per id issued, partials
/// only for `more` calls and only before the final one, no response to an
/// id never issued, no request or unasked-for event.
///
/// The probe client (`role: .probe`) issues no load; the run has it make the
/// held-call probes, whose answers it checks the same way.
final class LoadClient {
    enum Role { case load, probe }

    struct Record {
        var call: PlannedCall
        var partials = 0
        var finished = false
        var cancelAsked = false
    }

    let index: Int
    let role: Role
    let socket: LineSocket
    let violations: Violations
    private(set) var tally = Tally()
    private(set) var subscribed = false
    private var nextID: Int64 = 1
    private var records: [Int64: Record] = [:]
    private(set) var inFlight: Set<Int64> = []
    private var closedByDaemon = false
    /// Duplicate ids sent that still wait for their `bad_request` with `"id": null`.
    private(set) var duplicatesAwaitingRefusal = 0
    private let ourPID: Int64
    private let ourUID: Int64

    init(index: Int, role: Role = .load, socketPath: String, violations: Violations, pid: Int64, uid: Int64) throws {
        self.index = index
        self.role = role
        self.socket = try LineSocket.connect(path: socketPath)
        self.violations = violations
        self.ourPID = pid
        self.ourUID = uid
        // Id 0, before any of the client's own: descriptors may go both ways.
        let hello = try socket.result("mediator", "hello", params: ["protocol": 1, "fds": true], id: 0)
        guard (hello["max_fds"]?.intValue ?? 0) > 0 else {
            throw ChaosFailure("hello with \"fds\": true granted no max_fds: \(hello.jsonText)")
        }
    }

    var fd: Int32 { socket.fd }
    var isOpen: Bool { !closedByDaemon }

    /// Subscribes to the daemon's events (`mediator.registered` and
    /// `mediator.unregistered` flow at every kill and restart).
    func subscribe() {
        subscribed = true
        issue(PlannedCall(kind: .subscribe, target: "mediator", action: "subscribe", params: ["events": ["mediator.*"]], timeoutMs: nil))
    }

    /// Issues calls until `depth` are in flight; now and then one of them is
    /// a `mediator/cancel` of a slow call of this client's.
    func topUp(depth: Int, mix: CallMix, rng: inout SeededGenerator) {
        guard isOpen, role == .load else { return }
        while inFlight.count < depth {
            if Int.random(in: 0..<25, using: &rng) == 0, let victim = cancellableVictim(using: &rng) {
                records[victim]?.cancelAsked = true
                tally.cancelsSent += 1
                issue(PlannedCall(kind: .cancel, target: "mediator", action: "cancel", params: ["id": .int(victim)], timeoutMs: nil))
                continue
            }
            let kind = mix.draw(using: &rng)
            issue(mix.plan(kind, client: index, id: nextID, using: &rng))
        }
    }

    /// A call to `ChaosOnDemand` (which the run has just brought down, so
    /// that the call is held while the daemon starts it), then a second
    /// request with the same id at once: the daemon must refuse the second
    /// with `bad_request` and `"id": null`, and answer the first exactly once.
    func sendHeldDuplicate(mix: CallMix, rng: inout SeededGenerator) {
        guard isOpen else { return }
        let id = nextID
        issue(mix.plan(.heldDuplicate, client: index, id: id, using: &rng))
        tally.heldDuplicatesSent += 1
        duplicatesAwaitingRefusal += 1
        let duplicate = PlannedCall(
            kind: .heldDuplicate, target: ChaosTargets.onDemand, action: "echo", params: ["duplicate": .int(id)], timeoutMs: 3000)
        send(duplicate.request(id: id))
    }

    /// A call to `ChaosOnDemand` while it is being started, then a
    /// `mediator/cancel` of it at once: the call must be answered `cancelled`
    /// (and the cancel `{}`).
    func sendHeldCancel(mix: CallMix, rng: inout SeededGenerator) {
        guard isOpen else { return }
        let id = nextID
        issue(mix.plan(.heldCancel, client: index, id: id, using: &rng))
        records[id]?.cancelAsked = true
        tally.heldCancelsSent += 1
        tally.cancelsSent += 1
        issue(PlannedCall(kind: .cancel, target: "mediator", action: "cancel", params: ["id": .int(id)], timeoutMs: nil))
    }

    private func cancellableVictim(using rng: inout SeededGenerator) -> Int64? {
        let candidates = inFlight.filter { id in
            guard let record = records[id] else { return false }
            return record.call.kind.isCancellable && !record.cancelAsked
        }.sorted()
        return candidates.randomElement(using: &rng)
    }

    private func issue(_ call: PlannedCall) {
        let id = nextID
        nextID += 1
        records[id] = Record(call: call)
        inFlight.insert(id)
        tally.issued += 1
        tally.issuedByKind[call.kind, default: 0] += 1
        send(call.request(id: id), descriptors: call.descriptors)
    }

    /// Sends `request` with a memfd holding each of `descriptors`; this
    /// client's copies are closed once sent.
    private func send(_ request: JSONValue, descriptors: [String] = []) {
        do {
            let memfds = try descriptors.map { try TagMemfd.holding($0) }
            try socket.send(request, descriptors: memfds)
            tally.descriptorsSent += memfds.count
        } catch {
            violations.add("client could not send", "client \(index): \(error)")
            closedByDaemon = true
        }
    }

    /// Reads and checks whatever the daemon sent.
    func receive() {
        guard isOpen else { return }
        do {
            let open = try socket.readAvailable { line in handle(line) }
            if !open {
                closedByDaemon = true
                violations.add("daemon closed a client's connection", "client \(index) with \(inFlight.count) call(s) in flight")
            }
        } catch {
            closedByDaemon = true
            violations.add("client read failed", "client \(index): \(error)")
        }
    }

    private func handle(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let message = try? JSONParser.parse(bytes), message.objectValue != nil else {
            return violations.add("line that is not a JSON object", "client \(index): \(text.prefix(200))")
        }
        if let event = message["event"]?.stringValue {
            tally.eventsReceived += 1
            if !subscribed || !event.hasPrefix("mediator.") || event == "mediator.cancel" {
                violations.add("unexpected event", "client \(index) (subscribed: \(subscribed)): \(text.prefix(200))")
            }
            return
        }
        // The descriptors the line declares, read and closed here.
        var received: [String?] = []
        if let declared = message["fds"] {
            guard let count = declared.intValue, count > 0, let descriptors = socket.takeDescriptors(Int(count)) else {
                return violations.add(
                    "descriptors not as declared", "client \(index): \(socket.arrivedDescriptors.count) arrived for \(text.prefix(200))")
            }
            received = descriptors.map { TagMemfd.contents(of: $0) }
            tally.descriptorsReceived += descriptors.count
        }
        if message["target"] != nil || message["action"] != nil {
            return violations.add("request sent to a client", "client \(index): \(text.prefix(200))")
        }
        guard let idValue = message["id"] else {
            return violations.add("line of no known kind", "client \(index): \(text.prefix(200))")
        }
        if idValue == .null, message["error"]?["code"] == "bad_request", duplicatesAwaitingRefusal > 0 {
            // The refusal of a duplicate id; which one does not show, only how many.
            duplicatesAwaitingRefusal -= 1
            tally.duplicateIDsRefused += 1
            return
        }
        guard case .int(let id) = idValue else {
            return violations.add("response without one of our ids", "client \(index): \(text.prefix(200))")
        }
        guard var record = records[id] else {
            return violations.add("response for an id never issued", "client \(index) id \(id): \(text.prefix(200))")
        }
        let result = message["result"]
        let error = message["error"]
        guard (result == nil) != (error == nil) else {
            return violations.add("response without exactly one of result and error", "client \(index) id \(id): \(text.prefix(200))")
        }
        if record.finished {
            return violations.add("response after the final one", "client \(index) id \(id) (\(record.call.kind)): \(text.prefix(200))")
        }
        if message["continues"] == .bool(true) {
            guard record.call.more else {
                return violations.add("continues on a call without more", "client \(index) id \(id): \(text.prefix(200))")
            }
            guard let result else {
                return violations.add("continues on an error", "client \(index) id \(id): \(text.prefix(200))")
            }
            if result["i"]?.intValue != Int64(record.partials + 1) {
                violations.add("partials out of order", "client \(index) id \(id): partial \(record.partials + 1) was \(result.jsonText)")
            }
            if record.call.kind == .fdsStream {
                if result["f"] != ["$fd": 0] || received != ["part \(record.partials + 1)"] {
                    violations.add(
                        "partial without its descriptor",
                        "client \(index) id \(id): partial \(result.jsonText) with descriptors holding \(received)")
                }
                tally.partialsWithDescriptors += 1
            } else if !received.isEmpty {
                violations.add("descriptors with a partial", "client \(index) id \(id) (\(record.call.kind)): \(received)")
            }
            record.partials += 1
            tally.partials += 1
            records[id] = record
            return
        }
        record.finished = true
        records[id] = record
        inFlight.remove(id)
        let answer: FinalAnswer
        if let result {
            answer = .result(result)
            tally.results += 1
            if record.call.kind == .fdsRead { tally.descriptorResults += 1 }
            if record.partials > 0 { tally.streamsCompleted += 1 }
        } else {
            let code = error?["code"]?.stringValue ?? "(none)"
            answer = .error(code: code, message: error?["message"]?.stringValue ?? "")
            tally.errorsByCode[code, default: 0] += 1
            if record.partials > 0 { tally.errorsAfterPartials += 1 }
            if code == "chaos_failure" { tally.passedThroughErrors += 1 }
            if record.call.kind == .nestedOpen && code == "forbidden" {
                tally.nestedOpensForbidden += 1
                if record.call.nesting >= CallMix.deepNestingCounted { tally.deepNestedOpensForbidden += 1 }
            }
            if record.call.kind == .heldCancel && code == "cancelled" { tally.heldCancelsCancelled += 1 }
        }
        if record.call.kind == .heldDuplicate { tally.heldDuplicatesAnswered += 1 }
        if let problem = AnswerCheck.problem(
            answer, call: record.call, partials: record.partials, cancelAsked: record.cancelAsked,
            ourPID: ourPID, ourUID: ourUID, received: received)
        {
            violations.add("wrong answer", "client \(index) id \(id) (\(record.call.kind)): \(problem)")
        }
    }

    /// The calls still waiting for their final answer, described.
    func unanswered() -> [String] {
        inFlight.sorted().map { id in
            let record = records[id]
            let what = record.map { "\($0.call.kind) \($0.call.target)/\($0.call.action), \($0.partials) partial(s)" } ?? "?"
            return "client \(index) id \(id): \(what)"
        }
    }

    /// Whether every id issued has exactly one final answer (recorded as it
    /// came; a second one was a violation then), and every duplicate id its refusal.
    var allAnswered: Bool { inFlight.isEmpty && duplicatesAwaitingRefusal == 0 }
}
