extension MediatorClient {
    /// `mediator/subscribe`; returns the events that arrive on this
    /// connection and match one of `patterns` (exact name, `prefix.*`, `*`).
    ///
    /// Several subscriptions may overlap: each gets every matching event.
    /// The stream buffers without limit, so consume it. It ends normally
    /// when ``unsubscribe(_:)`` removes its last pattern or the client is
    /// closed, and throws `disconnected` (saying why) when the connection to
    /// the daemon is lost: a lost daemon never looks like a normal end.
    /// Dropping it tells the daemon to stop sending the patterns that no
    /// other subscription of this client still uses.
    ///
    /// `mediator.cancel` events are control messages for components and are
    /// never delivered here.
    ///
    /// - Throws: `bad_request` for a pattern that is not a valid one;
    ///   `forbidden` when the access policy does not allow a pattern;
    ///   `disconnected` when the connection is closed; else as
    ///   ``call(target:action:params:timeout:)``.
    public func events(_ patterns: [String]) async throws(MediatorError) -> MediatorStream<MediatorEvent> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: MediatorEvent.self)
        guard let token = connection.subscriptions.add(patterns, continuation) else {
            let error = connection.lossReason ?? .disconnected("the connection closed")
            continuation.finish(throwing: error)
            throw error
        }
        do {
            _ = try await call(
                target: ProtocolConstants.daemonTarget, action: "subscribe", params: ["events": .array(patterns.map(JSONValue.string))])
        } catch {
            _ = connection.subscriptions.remove(token)
            continuation.finish()
            throw error
        }
        continuation.onTermination = { [self] _ in
            let orphans = connection.subscriptions.remove(token)
            guard !orphans.isEmpty, !connection.isClosed else { return }
            try? connection.sendOneway(
                ProtocolConstants.daemonTarget, "unsubscribe", params: ["events": .array(orphans.map(JSONValue.string))])
        }
        return MediatorStream(stream)
    }

    /// ``events(_:)`` as a stream that cannot say why it ended: a lost
    /// connection ends it as quietly as an unsubscribe.
    @available(*, deprecated, renamed: "events(_:)", message: "events(_:) ends with the reason when the daemon is lost")
    public func subscribe(_ patterns: [String]) async throws(MediatorError) -> AsyncStream<MediatorEvent> {
        let events = try await events(patterns)
        return AsyncStream { continuation in
            let relay = Task {
                do {
                    for try await event in events { continuation.yield(event) }
                } catch {}
                continuation.finish()
            }
            continuation.onTermination = { _ in relay.cancel() }
        }
    }

    /// `mediator/unsubscribe`; then removes `patterns` from this client's
    /// subscriptions, ending those left without a pattern.
    ///
    /// - Throws: as ``call(target:action:params:timeout:)``; the subscriptions are
    ///   then left as they were.
    public func unsubscribe(_ patterns: [String]) async throws(MediatorError) {
        _ = try await call(
            target: ProtocolConstants.daemonTarget, action: "unsubscribe", params: ["events": .array(patterns.map(JSONValue.string))])
        connection.subscriptions.removePatterns(patterns)
    }
}
