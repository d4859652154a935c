import Logging
import MediatorProtocol
import MediatorTransport
import NIOCore

/// Responses from components, passed on to their callers, and events,
/// passed on to their subscribers (and monitors).
extension Broker {
    func handleResponse(_ envelope: Envelope, _ frame: ByteBuffer, from connection: ConnectionID, now: NIODeadline) {
        // Only the connection a call was sent to may answer it. The call is
        // looked at where it is stored; a final answer then takes it out, so
        // it is never copied.
        guard case .int(let daemonID)? = envelope.id, let bodyRange = envelope.resultRange ?? envelope.errorRange,
            let call = inFlight.withCall(daemonID, { call -> (more: Bool, resultSchema: Schema?)? in
                call.callee == connection ? (call.more, call.resultSchema) : nil
            }) ?? nil
        else {
            logger.debug("response dropped: no call with that id was sent to this connection", metadata: ["connection": "\(connection)"])
            return
        }
        let body = slice(frame, bodyRange)
        let isError = envelope.errorRange != nil
        // Descriptors with an answer go on with it (they stay in
        // `arrivingDescriptors` until sent: every other way out of here
        // releases them); a caller that cannot take them is told instead of
        // getting an answer without them.
        let fds = envelope.fds
        if fds > 0, let refusal = answerDescriptorRefusal(daemonID, fds: fds, from: connection) {
            refuseAnswerWithDescriptors(daemonID, refusal, from: connection, now: now)
            return
        }
        if fds > 0, envelope.resultRange != nil,
            let problem = descriptorReferenceProblem(body, fds: fds, root: "result")
        {
            refuseAnswerWithDescriptors(daemonID, problem, from: connection, now: now)
            return
        }
        if fds != (arrivingDescriptors?.count ?? 0) {
            refuseAnswerWithDescriptors(
                daemonID, MediatorError(
                    .badRequest, "file descriptors do not match \"fds\": \(fds) declared, \(arrivingDescriptors?.count ?? 0) arrived"),
                from: connection, now: now)
            return
        }
        // A `continues` the caller did not ask for is passed on as the final answer.
        let continues = envelope.continues && !isError && call.more
        // A result or error no client could decode is refused at once,
        // schema or not, rather than left for the caller's library to fail on.
        if envelope.answerHasLoneSurrogate {
            let problem = loneSurrogateProblem(body, member: isError ? "error" : "result")
            refuseResult(daemonID, problem: problem, partial: continues, from: connection, now: now)
            return
        }
        // Only an action that declares `result` has its results decoded;
        // errors pass through unchecked, as the contract says.
        if let resultSchema = call.resultSchema, !isError,
            let mismatch = resultSchema.validate(decode(body) ?? .null, path: "result", fds: envelope.fds)
        {
            refuseResult(daemonID, problem: mismatch.message, partial: continues, from: connection, now: now)
            return
        }
        if continues, let backlog, let caller = inFlight.withCall(daemonID, { $0.caller }) {
            let queued = backlog(caller)
            if queued > configuration.maxOutboundBytes / Self.streamBacklogDivisor {
                endStream(daemonID, backlog: queued, now: now)
                return
            }
        }
        let answered: (caller: ConnectionID, answer: ByteBuffer)?
        // What a monitor's record needs; copied only when someone monitors.
        var monitored: (target: String, startedAt: NIODeadline)?
        if continues {
            var deadline: NIODeadline?
            answered = inFlight.withCall(daemonID) { call in
                call.deadline = now + .milliseconds(call.timeoutMs)
                deadline = call.deadline
                statistics.partial(call.statisticsSlot)
                if !monitors.isEmpty { monitored = (call.target, call.startedAt) }
                let answer = writer.forwardedResponse(
                    callerID: call.callerIDBytes, isError: false, body: body, continues: true, fds: fds, storage: &spareLine)
                return (call.caller, answer)
            }
            if let deadline { wakeUp(at: deadline) }
        } else if let call = finish(daemonID, now: now) {
            recordAnswer(call, code: isError ? errorCode(of: body) : nil, now: now)
            if !monitors.isEmpty { monitored = (call.target, call.startedAt) }
            let answer = writer.forwardedResponse(
                callerID: call.callerIDBytes, isError: isError, body: body, continues: false, fds: fds, storage: &spareLine)
            recycleID(call.callerIDBytes)
            answered = (call.caller, answer)
        } else {
            answered = nil
        }
        guard let answered else { return }
        send(answered.caller, answered.answer, descriptors: fds > 0 ? takeArrivingDescriptors() : nil)
        if let monitored {
            monitorRecord(
                "response", from: connection, to: answered.caller, target: monitored.target, event: nil,
                elapsed: now - monitored.startedAt, message: answered.answer, now: now)
        }
    }

    /// A partial for a caller that has `backlog` bytes queued, past half
    /// of `max_outbound_bytes`: the component sends faster than the caller
    /// reads. Rather than queue on until the caller is disconnected as a
    /// peer that does not read, the stream ends: the caller gets
    /// `overloaded` as the final answer and the component `mediator.cancel`
    /// (the NATS bridge then cancels the call on the serving host).
    func endStream(_ daemonID: Int64, backlog: Int, now: NIODeadline) {
        guard let call = finish(daemonID, now: now) else { return }
        recordAnswer(call, code: ErrorCode.overloaded.rawValue, now: now)
        let limit = configuration.maxOutboundBytes / Self.streamBacklogDivisor
        let error = MediatorError(
            .overloaded,
            "\"\(call.target)/\(call.action)\" sends partial results faster than the caller reads them: the stream was ended with \(backlog) bytes queued toward the caller (the limit is half of max_outbound_bytes, \(limit))",
            data: ["limit": "max_outbound_bytes", "queued_bytes": .int(Int64(backlog))])
        send(call.caller, writer.error(callerID: call.callerIDBytes, error, delivered: forwardedDelivery(call)))
        sendCancelEvent(call)
        logger.notice(
            "stream ended: its caller reads more slowly than the component sends",
            metadata: [
                "target": "\(call.target)", "action": "\(call.action)", "queued_bytes": "\(backlog)",
                "caller_pid": "\(credentials(of: call.caller)?.pid ?? 0)",
            ])
    }

    /// Why a result or error (`member`) with a lone surrogate escape is
    /// refused, from the strict reading, which names the escape and where
    /// it is in the member.
    func loneSurrogateProblem(_ body: ByteBuffer, member: String) -> String {
        let reason = body.withUnsafeReadableBytes { bytes -> String in
            do {
                _ = try JSONParser.parse(bytes)
                return "a lone surrogate escape (no character)"
            } catch {
                return "\(error)"
            }
        }
        return member + ": " + reason
    }

    /// A result that does not match its action's `result` schema, or that
    /// holds a lone surrogate escape: the caller
    /// gets `invalid_result` as the final answer in its place, and the
    /// component gets `mediator.invalid_result` (an event, which it cannot
    /// take for the answer to a request of its own) and, when the result was
    /// a partial of a stream it would go on with, `mediator.cancel`.
    func refuseResult(_ daemonID: Int64, problem: String, partial: Bool, from connection: ConnectionID, now: NIODeadline) {
        guard let call = finish(daemonID, now: now) else { return }
        recordAnswer(call, code: ErrorCode.invalidResult.rawValue, now: now)
        let error = MediatorError(
            .invalidResult, problem, data: ["target": .string(call.target), "action": .string(call.action)])
        // The component ran it: it answered.
        let answer = writer.error(callerID: call.callerIDBytes, error, delivered: .yes)
        send(call.caller, answer)
        send(connection, writer.event("mediator.invalid_result", data: ["id": .int(daemonID), "message": .string(problem)]))
        if partial { sendCancelEvent(call) }
        // A component's bug, not the caller's: worth a line each time, but at notice, not per call at info.
        logger.notice(
            "result refused: it does not match the action's result schema or is not Unicode text",
            metadata: [
                "target": "\(call.target)", "action": "\(call.action)",
                "pid": "\(credentials(of: connection)?.pid ?? 0)", "problem": "\(problem)",
            ])
        if !monitors.isEmpty {
            monitorRecord(
                "response", from: connection, to: call.caller, target: call.target, event: nil,
                elapsed: now - call.startedAt, message: answer, now: now)
        }
    }

    /// Why an answer with `fds` descriptors cannot go to its caller, or nil
    /// when it can: both ends were granted `max_fds`, and the count is
    /// within it. The component's own fault (descriptors it was not granted,
    /// over `max_fds`) is `bad_request`, as for a request (contract section
    /// 8); a caller that cannot take them, or a daemon that passes none, is
    /// `fds_not_supported`.
    func answerDescriptorRefusal(_ daemonID: Int64, fds: Int, from connection: ConnectionID) -> MediatorError? {
        guard passesDescriptors else {
            return MediatorError(.fdsNotSupported, "the component answered with file descriptors, which this mediatord does not pass")
        }
        guard peers[connection]?.passesDescriptors == true else {
            return MediatorError(.badRequest, "the component answered with file descriptors without \"fds\": true in its hello")
        }
        guard fds <= configuration.maxFdsPerMessage else {
            return MediatorError(
                .badRequest, "the component answered with \(fds) file descriptors, over max_fds \(configuration.maxFdsPerMessage)")
        }
        let caller = inFlight.withCall(daemonID) { $0.caller }
        guard let caller, peers[caller]?.passesDescriptors == true else {
            return MediatorError(.fdsNotSupported, "the answer carries file descriptors and the caller did not say \"fds\": true in hello")
        }
        return nil
    }

    /// An answer with descriptors that cannot go on (`refusal`: its code
    /// and why): the caller gets the error in its place, the call ends (a
    /// partial's stream too: the component is told to stop).
    func refuseAnswerWithDescriptors(_ daemonID: Int64, _ refusal: MediatorError, from connection: ConnectionID, now: NIODeadline) {
        guard let call = finish(daemonID, now: now) else { return }
        recordAnswer(call, code: refusal.code.rawValue, now: now)
        let error = MediatorError(
            refusal.code, refusal.message, data: ["target": .string(call.target), "action": .string(call.action)])
        let answer = writer.error(callerID: call.callerIDBytes, error, delivered: .yes)
        send(call.caller, answer)
        if call.more { sendCancelEvent(call) }
        if !monitors.isEmpty {
            monitorRecord(
                "response", from: connection, to: call.caller, target: call.target, event: nil,
                elapsed: now - call.startedAt, message: answer, now: now)
        }
    }

    func handleEvent(_ envelope: Envelope, _ frame: ByteBuffer, from connection: ConnectionID, now: NIODeadline) {
        guard !NameRules.isReservedEvent(envelope.event) else {
            logger.debug("peer event with a reserved name dropped", metadata: ["event": "\(envelope.event)"])
            return
        }
        let data = envelope.dataRange.map { slice(frame, $0) }
        if let credentials = peers[connection]?.credentials, checkPolicy(.publish(event: envelope.event), credentials) != nil {
            return  // a bare event has no answer; the denial is logged
        }
        _ = publish(envelope.event, data: data)
        monitorEvent(envelope.event, data: data, from: connection, now: now)
    }

    func monitorEvent(_ name: String, data: ByteBuffer?, from connection: ConnectionID, now: NIODeadline) {
        guard !monitors.isEmpty else { return }
        monitorRecord(
            "event", from: connection, to: nil, target: nil, event: name, elapsed: nil,
            message: writer.event(name, rawData: data), now: now)
    }

    /// Sends an event to every connection with a matching pattern, once each.
    func publish(_ name: String, data: ByteBuffer?) -> Int {
        var line: ByteBuffer?
        var delivered = 0
        for (connection, peer) in peers where !peer.patterns.isEmpty {
            guard peer.patterns.contains(where: { NameRules.eventPattern($0, matches: name) }) else { continue }
            if skipsEvent(toward: peer.credentials.uid) { continue }
            if line == nil { line = writer.event(name, rawData: data) }
            if let line { send(connection, line) }
            delivered += 1
        }
        return delivered
    }

    func publishDaemonEvent(_ name: String, _ data: JSONValue) {
        var buffer = writer.allocator.buffer(capacity: 64)
        buffer.writeBytes(data.encoded)
        _ = publish(name, data: buffer)
    }
}
