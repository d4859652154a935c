import MediatorProtocol
import MediatorTransport
import NIOCore

extension Broker {
    /// A line whose descriptors did not come with it as its `fds` says
    /// (more, fewer, or some with a line that declares none): the host has
    /// closed them. A request is answered `bad_request` (contract section
    /// 8); a component's answer ends its call with that error for the
    /// caller; anything else counts as a bad frame.
    package func refuseMismatchedDescriptors(
        _ frame: ByteBuffer, from connection: ConnectionID, problem: String, now: NIODeadline
    ) -> [BrokerEffect] {
        guard peers[connection] != nil else { return [] }
        let error = MediatorError(.badRequest, "file descriptors do not match \"fds\": \(problem)")
        var envelope = Envelope(kind: .request)
        if let failure = frame.withUnsafeReadableBytes({ EnvelopeParser.parse($0, into: &envelope) }) {
            badFrame(from: connection, idBytes: failure.id.map(encodedID), failure.error)
            return takeEffects()
        }
        switch envelope.kind {
        case .request:
            badFrame(from: connection, idBytes: envelope.idRange.map { ownCopy(slice(frame, $0)) }, error, answer: envelope.id != nil)
        case .response:
            if case .int(let daemonID)? = envelope.id,
                inFlight.withCall(daemonID, { $0.callee == connection }) == true
            {
                refuseAnswerWithDescriptors(daemonID, error, from: connection, now: now)
            } else {
                badFrame(from: connection, idBytes: nil, error, answer: false)
            }
        case .event:
            badFrame(from: connection, idBytes: nil, error, answer: false)
        }
        return takeEffects()
    }
}
