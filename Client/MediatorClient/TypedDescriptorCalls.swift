import MediatorProtocol

// The pieces that generated clients and services use for an action whose
// params or result hold descriptors: each converts a value that is either
// ``DescriptorCarrying`` (with a ``DescriptorList``) or
// ``JSONValueConvertible`` (no descriptors), so that one side of an action
// may hold descriptors and the other not. Errors as the typed calls'.

extension DescriptorList {
    /// `params` as the request's JSON object, its descriptors appended to
    /// this list: `invalid_params` (nothing sent) when out of its schema's
    /// bounds or not an object.
    public mutating func params(_ params: some DescriptorCarrying) throws(MediatorError) -> JSONValue {
        do {
            try params.validate()
        } catch {
            throw MediatorError(.invalidParams, "params out of their schema's bounds: \(error)")
        }
        return try JSONBridge.objectParams(params.jsonValue(collecting: &self))
    }

    /// Params that hold no descriptor: the list is left as it is.
    public mutating func params(_ params: some JSONValueConvertible) throws(MediatorError) -> JSONValue {
        try JSONBridge.objectParams(JSONConversion.validatedParams(params).jsonValue)
    }
}

extension MediatorReply {
    /// A handler's answer of `value`, its descriptors numbered in the order
    /// it writes them (each sent once).
    public init(encoding value: some DescriptorCarrying) {
        var list = DescriptorList()
        let result = value.jsonValue(collecting: &list)
        self.init(result: result, descriptors: list.descriptors)
    }

    /// An answer that holds no descriptor.
    public init(encoding value: some JSONValueConvertible) {
        self.init(result: value.jsonValue)
    }

    /// The result read as `Value`, taking its descriptors from this reply;
    /// `invalid_result` when it does not fit.
    public func decodedResult<Value: DescriptorCarrying>(as type: Value.Type) throws(MediatorError) -> Value {
        try Value.decoded(from: result, descriptors, failing: .invalidResult, "the result does not")
    }

    /// The result read as `Value`, which holds no descriptor (any that
    /// came are closed with the reply).
    public func decodedResult<Value: JSONValueConvertible>(as type: Value.Type) throws(MediatorError) -> Value {
        try JSONBridge.result(Value.self, converting: result)
    }
}

extension MediatorStream where Element == MediatorReply {
    /// Each response read as `Value` (as `MediatorReply.decodedResult(as:)`);
    /// one that does not fit ends the stream with `invalid_result`.
    public func decoding<Value: DescriptorCarrying>(as type: Value.Type) -> MediatorStream<Value> {
        mapping { reply throws(MediatorError) in try reply.decodedResult(as: Value.self) }
    }

    /// Each response read as `Value`, which holds no descriptor.
    public func decoding<Value: JSONValueConvertible>(as type: Value.Type) -> MediatorStream<Value> {
        mapping { reply throws(MediatorError) in try reply.decodedResult(as: Value.self) }
    }

    private func mapping<Value: Sendable>(
        _ transform: @escaping @Sendable (MediatorReply) throws(MediatorError) -> Value
    ) -> MediatorStream<Value> {
        MediatorStream<Value>(AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await reply in self { continuation.yield(try transform(reply)) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        })
    }
}

extension MediatorStream {
    /// A stream that ends at once with `error`: a call refused before
    /// anything is sent (its params do not encode).
    public init(failing error: MediatorError) {
        self.init(AsyncThrowingStream { $0.finish(throwing: error) })
    }
}

extension CallContext {
    /// The request's params read as `Params`, taking its descriptors from
    /// ``descriptors``; `invalid_params` when they do not fit.
    public func decodedParams<Params: DescriptorCarrying>(as type: Params.Type) throws(MediatorError) -> Params {
        try Params.decoded(from: params, descriptors, failing: .invalidParams, "params do not")
    }

    /// Params that hold no descriptor.
    public func decodedParams<Params: JSONValueConvertible>(as type: Params.Type) throws(MediatorError) -> Params {
        try Component.convertParams(Params.self, self)
    }

    /// Sends a partial result that holds descriptors (`"continues": true`),
    /// as ``send(partial:descriptors:)``.
    public func send(encoding partial: some DescriptorCarrying) async {
        let reply = MediatorReply(encoding: partial)
        await send(partial: reply.result, descriptors: reply.descriptors)
    }
}

extension DescriptorCarrying {
    /// `decode(from:descriptors:)` whose failure is a `code` error saying
    /// "`what` (the params do not, the result does not) decode as ...".
    static func decoded(
        from json: JSONValue, _ descriptors: [OwnedFileDescriptor], failing code: ErrorCode, _ what: String
    ) throws(MediatorError) -> Self {
        do {
            return try decode(from: json, descriptors: DescriptorList(descriptors))
        } catch {
            throw MediatorError(code, "\(what) decode as \(Self.self): \(error)")
        }
    }
}

extension Component {
    /// ``addDescriptorAction(_:description:params:result:url:_:)`` from a
    /// complete ActionSpec (`more` included), registered as given: what
    /// `Component(serving:)` of a generated interface declares for its
    /// actions with descriptors. The component must set
    /// ``acceptsDescriptors``.
    public mutating func addDescriptorAction(
        _ spec: ActionSpec, _ handler: @escaping @Sendable (CallContext) async throws -> MediatorReply
    ) {
        declare(spec, .async({ .reply(try await handler($0)) }))
    }
}
