import MediatorProtocol

/// An object of a snapshot's encoding being read, with its path for
/// errors: each getter throws ``SnapshotError/malformed(path:expected:)``
/// naming the member, so a bad snapshot says where it is bad.
struct SnapshotMembers {
    let members: [String: JSONValue]
    let path: String

    init(_ value: JSONValue, path: String) throws(SnapshotError) {
        guard let members = value.objectValue else { throw .malformed(path: path, expected: "an object") }
        self.members = members
        self.path = path
    }

    func at(_ key: String) -> String { path + "." + key }

    func value(_ key: String) throws(SnapshotError) -> JSONValue {
        guard let value = members[key] else { throw .malformed(path: at(key), expected: "a member") }
        return value
    }

    func integer<Number: FixedWidthInteger>(_ key: String, as type: Number.Type = Number.self) throws(SnapshotError) -> Number {
        guard let raw = try value(key).intValue, let number = Number(exactly: raw) else {
            throw .malformed(path: at(key), expected: "an integer that fits \(Number.self)")
        }
        return number
    }

    func string(_ key: String) throws(SnapshotError) -> String {
        guard let text = try value(key).stringValue else { throw .malformed(path: at(key), expected: "a string") }
        return text
    }

    /// nil when the member is absent; a member of another type is an error.
    func optionalString(_ key: String) throws(SnapshotError) -> String? {
        members[key] == nil ? nil : try string(key)
    }

    func bool(_ key: String) throws(SnapshotError) -> Bool {
        guard let flag = try value(key).boolValue else { throw .malformed(path: at(key), expected: "true or false") }
        return flag
    }

    /// The items of an array member, each with its path.
    func items(_ key: String) throws(SnapshotError) -> [(value: JSONValue, path: String)] {
        guard let items = try value(key).arrayValue else { throw .malformed(path: at(key), expected: "an array") }
        return items.enumerated().map { ($0.element, at(key) + "[\($0.offset)]") }
    }

    func object(_ key: String) throws(SnapshotError) -> SnapshotMembers {
        try SnapshotMembers(value(key), path: at(key))
    }

    /// The objects of an array member.
    func objects(_ key: String) throws(SnapshotError) -> [SnapshotMembers] {
        var objects: [SnapshotMembers] = []
        for item in try items(key) { objects.append(try SnapshotMembers(item.value, path: item.path)) }
        return objects
    }

    func strings(_ key: String) throws(SnapshotError) -> [String] {
        var strings: [String] = []
        for item in try items(key) {
            guard let text = item.value.stringValue else { throw .malformed(path: item.path, expected: "a string") }
            strings.append(text)
        }
        return strings
    }

    func integers<Number: FixedWidthInteger>(_ key: String, as type: Number.Type = Number.self) throws(SnapshotError) -> [Number] {
        var numbers: [Number] = []
        for item in try items(key) {
            guard let raw = item.value.intValue, let number = Number(exactly: raw) else {
                throw .malformed(path: item.path, expected: "an integer that fits \(Number.self)")
            }
            numbers.append(number)
        }
        return numbers
    }

    /// An object of counts by name.
    func counts(_ key: String) throws(SnapshotError) -> [String: Int] {
        let object = try object(key)
        var counts: [String: Int] = [:]
        for name in object.members.keys { counts[name] = try object.integer(name) }
        return counts
    }
}

extension JSONValue {
    /// An integer member of a snapshot.
    static func count<Number: BinaryInteger>(_ number: Number) -> JSONValue { .int(Int64(number)) }

    /// A snapshot's set or list of names, sorted so that equal states encode the same.
    static func names(_ names: some Sequence<String>) -> JSONValue { .array(names.sorted().map(JSONValue.string)) }

    /// A snapshot's counts by name.
    static func counts(_ counts: [String: Int]) -> JSONValue { .object(counts.mapValues { .count($0) }) }
}
