import MediatorProtocol

/// Actions that answer with file descriptors (contract section 8); the
/// component must set ``Component/acceptsDescriptors``.
extension Component {
    /// Declares an action whose handler answers with descriptors (a name
    /// of its own: an `addAction` overload differing only in the closure's
    /// result type would make existing closures ambiguous): its
    /// ``MediatorReply``'s `result` refers to `descriptors[I]` as
    /// `{"$fd": I}`. The request's own descriptors are in
    /// ``CallContext/descriptors``. Otherwise as
    /// `addAction` with a `JSONValue` result;
    /// a reply whose descriptors cannot be sent (the caller or daemon takes
    /// none, too many, a `{"$fd": I}` with no such descriptor) is answered
    /// with that error instead.
    public mutating func addDescriptorAction(
        _ name: String, description: String? = nil, params: Schema? = nil, result: Schema? = nil, url: Bool? = nil,
        _ handler: @escaping @Sendable (CallContext) async throws -> MediatorReply
    ) {
        declare(
            ActionSpec(name: name, description: description, params: params, result: result, url: url),
            .async({ .reply(try await handler($0)) }))
    }
}

extension CallContext {
    /// ``send(partial:)`` with descriptors: `partial` refers to
    /// `descriptors[I]` as `{"$fd": I}`; duplicates are sent, the values
    /// stay the caller's. A partial whose descriptors cannot be sent ends
    /// the call with that error, as one over the frame limit does.
    public func send(partial: JSONValue, descriptors: [OwnedFileDescriptor]) async {
        guard let responder else { return }
        await responder.waitUntilWritable()
        responder.partial(partial, descriptors: descriptors)
    }
}

extension CallContext {
    /// The descriptor that `value` (`{"$fd": I}` in ``params``) refers to;
    /// nil when it is no such value or I is out of range.
    public func descriptor(_ value: JSONValue?) -> OwnedFileDescriptor? {
        DescriptorList(descriptors).descriptor(value)
    }
}
