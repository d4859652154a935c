import MediatorProtocol

/// An answer with the file descriptors that came with it (contract section
/// 8): what ``MediatorClient/call(target:action:params:descriptors:timeout:)``
/// returns, each item of ``MediatorClient/stream(target:action:params:descriptors:timeout:)``,
/// and what a component's handler answers to pass descriptors back.
///
/// Inside ``result`` the value `{"$fd": I}` stands for `descriptors[I]`
/// (``DescriptorEncodingContext`` writes such values). The descriptors are
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
        DescriptorEncodingContext.descriptor(value, in: descriptors)
    }
}

/// Collects the descriptors of one message while its params or result is
/// built, and gives the `{"$fd": I}` value that stands for each: for code
/// that places descriptors in JSON (generated code included).
///
/// ```swift
/// var context = DescriptorEncodingContext()
/// let params: JSONValue = ["log": context.reference(file)]
/// let reply = try await client.call(
///     target: "Archive", action: "store", params: params, descriptors: context.descriptors)
/// ```
public struct DescriptorEncodingContext: Sendable {
    /// The descriptors referenced so far, in the order of their indexes.
    public private(set) var descriptors: [OwnedFileDescriptor] = []

    /// An empty context.
    public init() {}

    /// The index of `descriptor` in ``descriptors``, added at the end unless
    /// the same value is there already (a descriptor referenced twice is
    /// sent once).
    public mutating func index(of descriptor: OwnedFileDescriptor) -> Int {
        if let index = descriptors.firstIndex(where: { $0 === descriptor }) { return index }
        descriptors.append(descriptor)
        return descriptors.count - 1
    }

    /// `{"$fd": I}` for `descriptor`, I from ``index(of:)-method``.
    public mutating func reference(_ descriptor: OwnedFileDescriptor) -> JSONValue {
        Self.reference(index(of: descriptor))
    }

    /// The value `{"$fd": index}`.
    public static func reference(_ index: Int) -> JSONValue {
        .object([FileDescriptorReferences.member: .int(Int64(index))])
    }

    /// The element of `descriptors` that `value` (`{"$fd": I}`) refers
    /// to; nil when it is no such value or I is out of range.
    public static func descriptor(_ value: JSONValue?, in descriptors: [OwnedFileDescriptor]) -> OwnedFileDescriptor? {
        referencedIndex(value).flatMap { descriptors.indices.contains($0) ? descriptors[$0] : nil }
    }

    /// The I of a `{"$fd": I}` value; nil for any other value.
    public static func referencedIndex(_ value: JSONValue?) -> Int? {
        guard case .object(let members)? = value, members.count == 1,
            let index = members[FileDescriptorReferences.member]?.intValue, index >= 0
        else { return nil }
        return Int(exactly: index)
    }
}
