import MediatorProtocol

/// The descriptors of one message, in order (contract section 8), where
/// `{"$fd": I}` in its JSON stands for the I-th of them: what code that
/// places descriptors in params or a result builds (generated types with a
/// descriptor member, `"format": "fd"`, included), and what it reads them
/// back from.
///
/// Encoding, `reference(_:)` (or ``index(of:)``) adds a descriptor and
/// gives the value to write; ``descriptors`` then go with the message:
///
/// ```swift
/// var list = DescriptorList()
/// let params: JSONValue = ["log": list.reference(file)]
/// let reply = try await client.call(
///     target: "Archive", action: "store", params: params, descriptors: list.descriptors)
/// ```
///
/// Decoding, ``take(at:)`` gives the descriptor an index names (throwing
/// when there is none), ``descriptor(_:)`` the one a `{"$fd": I}` value
/// names. The list holds handles, so a descriptor that no value takes is
/// closed with the list.
public struct DescriptorList: Sendable {
    /// The descriptors, in the order of their indexes.
    public private(set) var descriptors: [OwnedFileDescriptor]

    /// A list of `descriptors`: those received with a message, in order.
    public init(_ descriptors: [OwnedFileDescriptor] = []) {
        self.descriptors = descriptors
    }

    /// How many descriptors the list holds: the message's `fds`.
    public var count: Int { descriptors.count }
    /// Whether the list holds none (the message declares no `fds`).
    public var isEmpty: Bool { descriptors.isEmpty }

    /// The index of `descriptor`, the `I` of `{"$fd": I}`: added at the end
    /// unless the same handle is there already (a descriptor referred to
    /// twice is sent once).
    public mutating func index(of descriptor: OwnedFileDescriptor) -> Int {
        if let index = descriptors.firstIndex(where: { $0 === descriptor }) { return index }
        descriptors.append(descriptor)
        return descriptors.count - 1
    }

    /// `{"$fd": I}` for `descriptor`, I from ``index(of:)``.
    public mutating func reference(_ descriptor: OwnedFileDescriptor) -> JSONValue {
        Self.reference(index(of: descriptor))
    }

    /// The descriptor `{"$fd": index}` names. A message may name one
    /// descriptor more than once: each time gives the same handle.
    ///
    /// - Throws: ``JSONConversionError`` when `index` names none of the
    ///   list's descriptors: a typed action answers it as `invalid_params`,
    ///   a typed call throws it as `invalid_result`, as any value that does
    ///   not fit its type.
    public func take(at index: Int) throws(JSONConversionError) -> OwnedFileDescriptor {
        guard descriptors.indices.contains(index) else {
            throw JSONConversionError(
                expected: count == 0
                    ? "a descriptor, but the message has none"
                    : "a descriptor index from 0 to \(count - 1)",
                found: String(index))
        }
        return descriptors[index]
    }

    /// The descriptor that `value` (`{"$fd": I}`) names; nil when it is no
    /// such value or I is out of range.
    public func descriptor(_ value: JSONValue?) -> OwnedFileDescriptor? {
        Self.referencedIndex(value).flatMap { descriptors.indices.contains($0) ? descriptors[$0] : nil }
    }

    /// The value `{"$fd": index}`.
    public static func reference(_ index: Int) -> JSONValue {
        .object([FileDescriptorReferences.member: .int(Int64(index))])
    }

    /// The I of a `{"$fd": I}` value (I not negative, no other member); nil
    /// for any other value.
    public static func referencedIndex(_ value: JSONValue?) -> Int? {
        guard case .object(let members)? = value, members.count == 1,
            let index = members[FileDescriptorReferences.member]?.intValue, index >= 0
        else { return nil }
        return Int(exactly: index)
    }
}

/// A value with descriptors in it: a generated type with a descriptor
/// member (at any depth), ``OwnedFileDescriptor`` itself, and arrays and
/// optionals of them. Such a value is not `Codable` (a descriptor is not
/// JSON); it converts to and from JSON with the message's ``DescriptorList``.
public protocol DescriptorCarrying: Sendable {
    /// Reads a value from `jsonValue`, taking the descriptor of each
    /// `{"$fd": I}` from `descriptors` (the handle itself: a descriptor
    /// named twice is one handle).
    ///
    /// - Throws: a ``JSONConversionError`` naming where the value does not
    ///   fit the type (an index out of range included).
    static func decode(from jsonValue: JSONValue, descriptors: DescriptorList) throws(JSONConversionError) -> Self
    /// The value as JSON, each descriptor appended to `descriptors` and
    /// written `{"$fd": I}` with its index.
    func jsonValue(collecting descriptors: inout DescriptorList) -> JSONValue
    /// Checks the bounds its schema puts on the other members, as
    /// ``JSONValueConvertible/validate()`` does; the default checks nothing.
    func validate() throws(JSONConversionError)
}

extension DescriptorCarrying {
    public func validate() throws(JSONConversionError) {}
}

extension OwnedFileDescriptor: DescriptorCarrying {
    /// The descriptor `{"$fd": I}` names, with no other member.
    public static func decode(from jsonValue: JSONValue, descriptors: DescriptorList) throws(JSONConversionError)
        -> OwnedFileDescriptor
    {
        // Not referencedIndex: a negative index is named as out of range.
        guard case .object(let members) = jsonValue, members.count == 1,
            let index = members[FileDescriptorReferences.member]?.intValue, let exact = Int(exactly: index)
        else {
            throw JSONConversionError(expected: "a descriptor {\"$fd\": I}", got: jsonValue)
        }
        return try descriptors.take(at: exact)
    }

    public func jsonValue(collecting descriptors: inout DescriptorList) -> JSONValue {
        descriptors.reference(self)
    }
}

/// An array of descriptor-carrying values carries their descriptors, in order.
extension Array: DescriptorCarrying where Element: DescriptorCarrying {
    public static func decode(from jsonValue: JSONValue, descriptors: DescriptorList) throws(JSONConversionError) -> [Element] {
        guard case .array(let items) = jsonValue else { throw JSONConversionError(expected: "an array", got: jsonValue) }
        var values: [Element] = []
        values.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            do {
                values.append(try Element.decode(from: item, descriptors: descriptors))
            } catch {
                throw error.inside(String(index))
            }
        }
        return values
    }

    public func jsonValue(collecting descriptors: inout DescriptorList) -> JSONValue {
        .array(map { $0.jsonValue(collecting: &descriptors) })
    }

    public func validate() throws(JSONConversionError) {
        for (index, item) in enumerated() { try JSONConversion.validate(item, at: [String(index)]) }
    }
}

/// An optional descriptor-carrying value: `null` when nil.
extension Optional: DescriptorCarrying where Wrapped: DescriptorCarrying {
    /// `null` is nil.
    public static func decode(from jsonValue: JSONValue, descriptors: DescriptorList) throws(JSONConversionError) -> Wrapped? {
        jsonValue.isNull ? nil : try Wrapped.decode(from: jsonValue, descriptors: descriptors)
    }

    public func jsonValue(collecting descriptors: inout DescriptorList) -> JSONValue {
        map { $0.jsonValue(collecting: &descriptors) } ?? .null
    }

    public func validate() throws(JSONConversionError) { try self?.validate() }
}

/// What generated `decode(from:descriptors:)`s call for each member
/// that holds descriptors, by the rules of ``JSONConversion``'s.
extension DescriptorList {
    /// A member that must be present and not null.
    public func required<T: DescriptorCarrying>(_ members: [String: JSONValue], _ key: String)
        throws(JSONConversionError) -> T
    {
        guard let value = members[key] else {
            throw JSONConversionError(path: [key], expected: "a member \(key)", found: "missing")
        }
        return try convert(value, key)
    }

    /// A member that must be present and may be null.
    public func requiredNullable<T: DescriptorCarrying>(_ members: [String: JSONValue], _ key: String)
        throws(JSONConversionError) -> T?
    {
        guard let value = members[key] else {
            throw JSONConversionError(path: [key], expected: "a member \(key)", found: "missing")
        }
        return value.isNull ? nil : try convert(value, key) as T
    }

    /// A member that may be absent or null (both are nil).
    public func optional<T: DescriptorCarrying>(_ members: [String: JSONValue], _ key: String)
        throws(JSONConversionError) -> T?
    {
        guard let value = members[key], !value.isNull else { return nil }
        return try convert(value, key) as T
    }

    private func convert<T: DescriptorCarrying>(_ value: JSONValue, _ key: String) throws(JSONConversionError) -> T {
        do {
            return try T.decode(from: value, descriptors: self)
        } catch {
            throw error.inside(key)
        }
    }
}

extension JSONConversion {
    /// `value.validate()`, its error placed under `path` (a member, an index).
    public static func validate(_ value: some DescriptorCarrying, at path: @autoclosure () -> [String])
        throws(JSONConversionError)
    {
        do { try value.validate() } catch { throw JSONConversionError(path: path() + error.path, expected: error.expected, found: error.found) }
    }
}
