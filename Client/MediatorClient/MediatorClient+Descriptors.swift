#if canImport(Glibc)
import Glibc
#endif
import MediatorProtocol
import Instrumentation
import MediatorSocket
import ServiceContextModule
import Tracing

/// Calls that pass file descriptors (contract section 8): the client must
/// connect with `fds: true`.
extension MediatorClient {
    /// The most descriptors one message may carry, the daemon's `max_fds`
    /// from `hello`; 0 when this client did not connect with `fds: true`
    /// or the daemon passes no descriptors.
    public var maxDescriptorsPerMessage: Int { connection.maxDescriptorsPerMessage }

    /// Calls `action` of `target` with `descriptors`, and returns the
    /// result with the descriptors that came with it.
    ///
    /// `params` refers to `descriptors[I]` as `{"$fd": I}`
    /// (``DescriptorList`` builds both). Duplicates are sent:
    /// the descriptors given stay the caller's. The answer's descriptors
    /// are the reply's, closed when it goes; when the call fails, times
    /// out, is cancelled or the connection is lost, the ones that came are
    /// closed.
    ///
    /// - Parameters:
    ///   - target: the target's name.
    ///   - action: the action's name.
    ///   - params: the request's `params`, a JSON object.
    ///   - descriptors: sent with the request, in order; may be empty (the
    ///     call still receives the answer's descriptors).
    ///   - timeout: as in ``call(target:action:params:timeout:)``.
    /// - Throws: `fds_not_supported` when the client did not connect with
    ///   `fds: true` or the daemon passes none (nothing sent);
    ///   `invalid_params` for more descriptors than ``maxDescriptorsPerMessage``;
    ///   `bad_request` for a `{"$fd": I}` with no such descriptor, or an
    ///   answer whose descriptors are not the ones it declares; else as
    ///   ``call(target:action:params:timeout:)``.
    public func call(
        target: String, action: String, params: JSONValue = .object([:]), descriptors: [OwnedFileDescriptor],
        timeout: Duration? = nil
    ) async throws(MediatorError) -> MediatorReply {
        var request = ClientRequest(kind: .call, target: target, action: action, params: .value(params), timeout: timeout)
        request.descriptors = descriptors
        request.passesDescriptors = true
        let mode = tracing.mode
        guard case .off = mode, !hasInterceptors else {
            let response = try await intercepted(request, mode: mode)
            return MediatorReply(result: response.result, descriptors: response.descriptors)
        }
        return try await callPassingDescriptors(request)
    }

    /// ``call(target:action:params:descriptors:timeout:)`` on behalf of a
    /// caller on another host (`remote_caller`), for the NATS bridge: the
    /// daemon honours it from its own bridge only. No interceptors, no trace.
    @_spi(NATSBridge) public func call(
        _ target: String, _ action: String, params: JSONValue, descriptors: [OwnedFileDescriptor], timeout: Duration?,
        remoteCaller: JSONValue
    ) async throws(MediatorError) -> MediatorReply {
        let timeoutMs = timeout.map(Connection.milliseconds)
        let sent = try outgoing(descriptors, params: params)
        return try await connection.call(timeoutMs: timeoutMs, waiter: Waiter.reply, descriptors: sent) { id in
            OutboundMessage.declaringDescriptors(sent.count, in: OutboundMessage.request(
                id: .int(id), target: target, action: action, params: params, timeoutMs: timeoutMs, remoteCaller: remoteCaller))
        }
    }

    /// ``markedStream(_:_:params:timeout:remoteCaller:)`` with `descriptors`
    /// sent with the request and each response's in its ``StreamItem``,
    /// for the NATS bridge. A refusal ends the stream with the error at once.
    @_spi(NATSBridge) public func markedStream(
        _ target: String, _ action: String, params: JSONValue, descriptors: [OwnedFileDescriptor], timeout: Duration?,
        remoteCaller: JSONValue
    ) -> AsyncThrowingStream<StreamItem, any Error> {
        let sent: [OwnedDescriptor]
        do {
            sent = try outgoing(descriptors, params: params)
        } catch {
            return AsyncThrowingStream { $0.finish(throwing: error) }
        }
        return connection.stream(
            of: StreamItem.self, waiter: { .markedReplyStream(StreamSink($0)) }, target, action, params: params,
            timeoutMs: timeout.map(Connection.milliseconds), keepAlive: self, trace: nil, remoteCaller: remoteCaller,
            descriptors: sent)
    }

    /// Sends a call with its descriptors as the interceptors leave it.
    func callPassingDescriptors(_ request: ClientRequest) async throws(MediatorError) -> MediatorReply {
        let (target, action, params, trace) = (request.target, request.action, request.params, request.trace)
        let timeoutMs = request.timeout.map(Connection.milliseconds)
        let sent = try outgoing(request.descriptors, params: params)
        return try await connection.call(timeoutMs: timeoutMs, waiter: Waiter.reply, descriptors: sent) { id in
            OutboundMessage.declaringDescriptors(sent.count, in: OutboundMessage.request(
                id: .int(id), target: target, action: action, params: params, timeoutMs: timeoutMs,
                traceparent: trace?.traceparent, tracestate: trace?.tracestate))
        }
    }

    /// ``stream(target:action:params:timeout:)`` with `descriptors` sent
    /// with the request and each response's descriptors in its
    /// ``MediatorReply``, as ``call(target:action:params:descriptors:timeout:)``.
    /// A refusal (see that call) ends the stream with the error at once.
    public func stream(
        target: String, action: String, params: JSONValue = .object([:]), descriptors: [OwnedFileDescriptor],
        timeout: Duration? = nil
    ) -> MediatorStream<MediatorReply> {
        let timeoutMs = timeout.map(Connection.milliseconds)
        let sent: [OwnedDescriptor]
        do {
            sent = try outgoing(descriptors, params: params)
        } catch {
            return MediatorStream(AsyncThrowingStream { $0.finish(throwing: error) })
        }
        // The trace context only (a span per stream is the untyped stream's);
        // the interceptors see streams of JSON values, not these.
        var metadata: [String: String] = [:]
        switch tracing.mode {
        case .off: break
        case .instrument(let instrument):
            instrument.inject(ServiceContext.current ?? .topLevel, into: &metadata, using: MetadataInjector())
        case .tracer(let tracer):
            tracer.inject(ServiceContext.current ?? .topLevel, into: &metadata, using: MetadataInjector())
        }
        let trace = ClientRequest(kind: .stream, target: target, action: action, metadata: metadata).trace
        return MediatorStream(connection.stream(
            of: MediatorReply.self, waiter: { .replyStream(StreamSink($0)) }, target, action, params: params,
            timeoutMs: timeoutMs, keepAlive: self, trace: trace, remoteCaller: nil, descriptors: sent))
    }

    /// Duplicates of `descriptors`, to be sent with a message whose JSON is
    /// `params`, after the checks both calls make.
    func outgoing(_ descriptors: [OwnedFileDescriptor], params: JSONValue) throws(MediatorError) -> [OwnedDescriptor] {
        try connection.outgoing(descriptors, json: params, root: "params")
    }
}

extension Connection {
    /// Duplicates of `descriptors` to send with a message whose `params` or
    /// `result` (`root`) is `json`: refused with `fds_not_supported` when
    /// this connection passes none, `invalid_params` over the daemon's
    /// `max_fds`, `bad_request` when `json` refers to one not there.
    func outgoing(_ descriptors: [OwnedFileDescriptor], json: JSONValue, root: String) throws(MediatorError) -> [OwnedDescriptor] {
        guard !descriptors.isEmpty else { return [] }
        let limit = maxDescriptorsPerMessage
        guard acceptsDescriptors, limit > 0 else {
            throw MediatorError(
                .fdsNotSupported, "descriptors need a connection made with fds: true to a daemon that passes them"
            ).delivered(.no)
        }
        guard descriptors.count <= limit else {
            throw MediatorError(
                .invalidParams, "\(descriptors.count) descriptors in one message; the daemon takes at most \(limit)"
            ).delivered(.no)
        }
        do {
            _ = try FileDescriptorReferences.indexes(in: json, fds: descriptors.count, root: root)
        } catch {
            throw error.delivered(.no)
        }
        var copies: [OwnedDescriptor] = []
        copies.reserveCapacity(descriptors.count)
        for descriptor in descriptors {
            do {
                copies.append(try descriptor.owned.duplicate())
            } catch {
                throw MediatorError(.invalidParams, "cannot send \(descriptor): \(error)").delivered(.no)
            }
        }
        return copies
    }
}
