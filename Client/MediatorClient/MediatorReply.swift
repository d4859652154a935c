import MediatorProtocol

/// An answer with the file descriptors that came with it (contract section
/// 8): what ``MediatorClient/call(target:action:params:descriptors:timeout:)``
/// returns, each item of ``MediatorClient/stream(target:action:params:descriptors:timeout:)``,
/// and what a component's handler answers to pass descriptors back.
///
/// Inside ``result`` the value `{"$fd": I}` stands for `descriptors[I]`
/// (``DescriptorList`` writes such values). The descriptors are
/// owned: each is closed when the last reference to it goes, so a reply
/// dropped unread leaks nothing.
public struct MediatorReply: Sendable {
    /// The `result` (or the partial result of a stream).
    public var result: JSONValue
    /// The descriptors that came with it, in order; empty when none did.
    public var descriptors: [OwnedFileDescriptor]

    /// A reply of `result` and the `descriptors` its `{"$fd": I}` values
    /// refer to. As a handler's answer, the descriptors are sent as
    /// duplicates: they stay this value's, closed when it goes.
    public init(result: JSONValue, descriptors: [OwnedFileDescriptor] = []) {
        self.result = result
        self.descriptors = descriptors
    }

    /// The descriptor that `value` (`{"$fd": I}`) refers to; nil when it
    /// is no such value or I is out of range.
    public func descriptor(_ value: JSONValue?) -> OwnedFileDescriptor? {
        DescriptorList(descriptors).descriptor(value)
    }
}
