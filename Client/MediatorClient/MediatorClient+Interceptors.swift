import MediatorProtocol

/// The calls' path through the interceptors (and the tracing), taken when
/// there are any or tracing is on.
extension MediatorClient {
    /// Runs a call or oneway request through the chain; the last `next` sends it.
    func intercepted(_ request: ClientRequest, mode: CallTracing.Mode) async throws(MediatorError) -> ClientResponse {
        try await chain.run(request, mode: mode) { [self] (request) async throws(MediatorError) in
            try await send(request)
        }
    }

    /// Sends a call or oneway request as the interceptors leave it. A
    /// stream's is sent by ``interceptedStream(_:mode:)``, which has
    /// somewhere to put the partial responses.
    private func send(_ request: ClientRequest) async throws(MediatorError) -> ClientResponse {
        let timeoutMs = request.timeout.map(Connection.milliseconds)
        if request.passesDescriptors {
            let reply = try await callPassingDescriptors(request)
            return ClientResponse(result: reply.result, descriptors: reply.descriptors)
        }
        switch (request.kind, request.encodedParams) {
        case (.call, .value(let params)):
            return ClientResponse(result: try await connection.call(
                request.target, request.action, params: params, timeoutMs: timeoutMs, trace: request.trace))
        case (.call, .encoded(let text)):
            return ClientResponse(encoded: try await connection.call(
                request.target, request.action, encodedParams: text, timeoutMs: timeoutMs, trace: request.trace))
        case (.oneway, _):
            try connection.sendOneway(request.target, request.action, params: request.params, trace: request.trace)
            return ClientResponse(result: .null)
        case (.stream, _):
            // Only ``interceptedStream(_:mode:)`` makes stream requests,
            // and `kind` cannot change on the way.
            throw MediatorError(.internal, "a stream request reached the path of calls")
        }
    }

    /// A stream through the chain: a task runs it, the last `next` sending
    /// the request and passing each partial response on to the stream
    /// returned; the final response, as the interceptors leave it, ends it.
    /// Ending the iteration cancels the task, and so the call.
    func interceptedStream(_ request: ClientRequest, mode: CallTracing.Mode) -> MediatorStream<JSONValue> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: JSONValue.self)
        // An unstructured task keeps the caller's task-locals
        // (`ServiceContext.current`, the span a stream is a child of).
        let task = Task { [self] in
            do throws(MediatorError) {
                let response = try await chain.run(request, mode: mode) { [self] (request) async throws(MediatorError) in
                    try await streamResponses(request, partials: continuation)
                }
                continuation.yield(response.result)
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return MediatorStream(stream)
    }

    /// Sends a stream request, yields its partial responses to `partials`,
    /// and returns the final one.
    private func streamResponses(
        _ request: ClientRequest, partials: AsyncThrowingStream<JSONValue, any Error>.Continuation
    ) async throws(MediatorError) -> ClientResponse {
        let responses = connection.markedStream(
            request.target, request.action, params: request.params, timeoutMs: request.timeout.map(Connection.milliseconds),
            keepAlive: self, trace: request.trace)
        var final: JSONValue?
        do {
            for try await item in responses {
                if item.isFinal { final = item.value } else { partials.yield(item.value) }
            }
        } catch {
            throw MediatorStream<JSONValue>.mediatorError(error)
        }
        // The responses end without a final one only when the task was cancelled.
        guard let final else { throw MediatorStream<JSONValue>.mediatorError(CancellationError()) }
        return ClientResponse(result: final)
    }
}
