import MediatorProtocol
import NIOCore

extension Broker {
    /// The `reason` of `mediator.restarting` on a graceful stop.
    static let stoppingReason = "stopping"
    /// ... and when a re-executed daemon could not read its predecessor's state.
    static let handOverRefusedReason = "handover_refused"

    /// The `reason` of `mediator.reregister` after a crash whose connections survived.
    static let crashReason = "crash"

    /// Tells every peer that the daemon kept its connection but lost what
    /// it knew of it (`mediator.reregister`): it registers and subscribes
    /// again. Calls to targets not back yet are held meanwhile, for a while.
    func announceReregister(reason: String, now: NIODeadline) -> [BrokerEffect] {
        let line = writer.event(DaemonEventName.reregister, data: ["reason": .string(reason)])
        for connection in peers.keys { send(connection, line) }
        openReregistrationHold(now: now)
        return takeEffects()
    }

    /// The `mediator.restarting` line (with its LF) for a connection the
    /// broker does not know: one handed over with a state it could not read.
    package func restartingLine(reason: String) -> ByteBuffer {
        writer.event(DaemonEventName.restarting, data: ["reason": .string(reason)])
    }

    /// Tells every peer that the daemon is about to close its connection
    /// and that a daemon will listen on the socket again
    /// (`mediator.restarting`), so that libraries reconnect at once
    /// instead of backing off. The host closes the connections after it.
    package func announceRestart(reason: String = Broker.stoppingReason) -> [BrokerEffect] {
        let line = writer.event(DaemonEventName.restarting, data: ["reason": .string(reason)])
        for connection in peers.keys { send(connection, line) }
        return takeEffects()
    }

    /// The answer to a `mediator/reexec` call of a connection the broker
    /// does not know (its state was not readable): the re-exec happened,
    /// as a clean restart, and `cleanRestart` says why.
    package func reexecAnswerLine(idBytes: [UInt8], cleanRestart: String) -> ByteBuffer {
        var id = writer.allocator.buffer(capacity: idBytes.count)
        id.writeBytes(idBytes)
        return writer.result(callerID: id, ["clean_restart": .string(cleanRestart)])
    }

    /// Answers the `mediator/reexec` call `idBytes` on `connection` (nothing
    /// for a oneway one): from the new image once it carries on, or with
    /// the reason from the old one when the exec failed.
    func answerReexec(_ idBytes: ByteBuffer?, on connection: ConnectionID, _ outcome: Result<JSONValue, MediatorError>) -> [BrokerEffect] {
        guard peers[connection] != nil else { return [] }
        answer(idBytes, connection, outcome)
        return takeEffects()
    }

    /// Whether calls (or `start`s) wait for a component to register, or for their target to register again.
    var hasHeldCalls: Bool { !activation.heldCalls.isEmpty || !reregistrationHold.isEmpty }

    /// Whether calls wait that a snapshot cannot carry: a call held for a
    /// starting component with descriptors or from the NATS bridge, and
    /// the calls of the re-registration hold (its window is short, so a
    /// hand-over waits for it to close rather than carry it). A hand-over
    /// waits for them to go out, within a bound, then answers them.
    var hasUncarriedHeldCalls: Bool { uncarriedHeldCalls > 0 }

    /// How many held calls a snapshot now would leave out.
    var uncarriedHeldCalls: Int {
        var count = reregistrationHold.index.tallies.values.reduce(0) { $0 + $1.calls }
        guard !activation.heldCalls.isEmpty else { return count }
        for component in activation.components.values { count += component.held.lazy.filter { !$0.isCarried }.count }
        return count
    }

    /// Answers with `error` every held call a snapshot cannot carry.
    func answerUncarriedHeldCalls(_ error: MediatorError, now: NIODeadline) -> [BrokerEffect] {
        carryOut(activation.failHeld(where: { !$0.isCarried }, error), now: now)
        failReregistrationHold(error, now: now)
        return takeEffects()
    }
}
