/// The `{"$fd": I}` values inside a request's `params` or a response's
/// `result` (contract section 8): each stands for the I-th descriptor sent
/// with the message.
///
/// Only a message with `fds` is to be searched: in one without, as in
/// `error` and events, `{"$fd": …}` is ordinary data. A descriptor that no value references is allowed (its receiver
/// closes it), and an index may be referenced more than once (the same
/// descriptor). A value is refused when `{"$fd": I}` has another member,
/// when I is not an integer, or when I is not below the message's `fds`.
///
/// Both forms cost one pass over the value: the JSON text (the daemon's,
/// which holds `params` as bytes of the frame and decodes nothing else) and
/// a decoded ``JSONValue`` (a library's). In the text, member names are
/// matched on their bytes; only a short name written with escapes, or the
/// path of the one value refused, is decoded.
public enum FileDescriptorReferences {
    /// The member that makes an object a reference.
    public static let member = "$fd"

    /// The indexes `json` (one JSON value, such as a `params` range of a
    /// frame) references, ascending and each once. `fds` is the message's
    /// `fds`; `root` names the value in the error (`params`, `result`).
    /// Throws `bad_request` naming the value refused (`params.file: …`),
    /// also for text that is not JSON.
    public static func indexes(
        in json: UnsafeRawBufferPointer, fds: Int, root: String, maxDepth: Int = JSONParser.defaultMaxDepth
    ) throws(MediatorError) -> [Int] {
        var parser = JSONParser(json, maxDepth: maxDepth)
        var found = Found(fds: fds)
        do {
            parser.skipWhitespace()
            try parser.collectDescriptorReferences(depth: 0, into: &found)
            parser.skipWhitespace()
            guard parser.atEnd else { throw parser.error("unexpected data after the value") }
        } catch let problem as Problem {
            throw MediatorError(.badRequest, problem.message(root: root))
        } catch {
            throw MediatorError(.badRequest, "\(root): malformed JSON: \(error)")
        }
        return found.indexes
    }

    /// The same for a decoded value: a library's `params` or `result`.
    public static func indexes(
        in value: JSONValue, fds: Int, root: String, maxDepth: Int = JSONParser.defaultMaxDepth
    ) throws(MediatorError) -> [Int] {
        var found = Found(fds: fds)
        do {
            try collect(value, depth: 0, maxDepth: maxDepth, into: &found)
        } catch {
            throw MediatorError(.badRequest, error.message(root: root))
        }
        return found.indexes
    }

    private static func collect(_ value: JSONValue, depth: Int, maxDepth: Int, into found: inout Found) throws(Problem) {
        switch value {
        case .object(let members):
            guard depth + 1 <= maxDepth else { throw Problem(.tooDeep) }
            if let reference = members[member] {
                guard members.count == 1 else { throw Problem(.notAlone) }
                guard let index = reference.intValue else { throw Problem(.notAnIndex(got: reference.typeName)) }
                try found.insert(index)
                return
            }
            // The first refused member by name, so that the message does not
            // depend on the dictionary's order.
            var first: (name: String, problem: Problem)?
            for (name, item) in members {
                do {
                    try collect(item, depth: depth + 1, maxDepth: maxDepth, into: &found)
                } catch {
                    if first.map({ name < $0.name }) ?? true { first = (name, error) }
                }
            }
            if var first {
                first.problem.reversedPath.append(.member(first.name))
                throw first.problem
            }
        case .array(let items):
            guard depth + 1 <= maxDepth else { throw Problem(.tooDeep) }
            for (index, item) in items.enumerated() {
                do {
                    try collect(item, depth: depth + 1, maxDepth: maxDepth, into: &found)
                } catch {
                    var problem = error
                    problem.reversedPath.append(.index(index))
                    throw problem
                }
            }
        default:
            return
        }
    }

    /// The indexes referenced so far.
    struct Found {
        let fds: Int
        /// One flag per descriptor, made at the first reference.
        private var referenced: [Bool] = []

        init(fds: Int) { self.fds = max(fds, 0) }

        mutating func insert(_ index: Int64) throws(Problem) {
            guard index >= 0, index < fds else { throw Problem(.outOfRange(index, fds: fds)) }
            if referenced.isEmpty { referenced = Array(repeating: false, count: fds) }
            referenced[Int(index)] = true
        }

        var indexes: [Int] { referenced.indices.filter { referenced[$0] } }
    }

    /// Why a value was refused, and where: the path is collected on the way
    /// back up from the value refused, as ``Schema`` does.
    struct Problem: Error {
        enum Reason {
            case notAlone
            /// The JSON type of what `$fd` holds.
            case notAnIndex(got: String)
            case outOfRange(Int64, fds: Int)
            case tooDeep
        }

        let reason: Reason
        /// From the value refused up to the value searched; each level adds its step as the error passes.
        var reversedPath: [Schema.PathStep] = []

        init(_ reason: Reason) { self.reason = reason }

        func message(root: String) -> String {
            let path = Schema.path(root, reversedPath)
            switch reason {
            case .notAlone:
                return path + ": an object with \"$fd\" stands for a descriptor and must have no other member"
            case .notAnIndex(let type):
                return path + ": \"$fd\" must be an integer, the index of a descriptor sent with the message; got \(type)"
            case .outOfRange(let index, let fds) where fds == 0:
                return path + ": \"$fd\" \(index) refers to no descriptor: the message has no \"fds\""
            case .outOfRange(let index, let fds):
                return path + ": \"$fd\" \(index) is out of range: the message has \"fds\": \(fds), so 0 to \(fds - 1)"
            case .tooDeep:
                return path + ": nested too deeply to search for \"$fd\""
            }
        }
    }
}

// The walk over JSON text: ``JSONParser/skipValue(depth:)``'s checks, plus
// each object's `$fd` member noted.
extension JSONParser {
    mutating func collectDescriptorReferences(depth: Int, into found: inout FileDescriptorReferences.Found) throws {
        guard !atEnd else { throw error("unexpected end of input") }
        switch current {
        case UInt8(ascii: "{"), UInt8(ascii: "["): try collectReferencesInContainer(depth: depth + 1, into: &found)
        default: try skipValue(depth: depth)
        }
    }

    private mutating func collectReferencesInContainer(depth: Int, into found: inout FileDescriptorReferences.Found) throws {
        guard let (isObject, close) = try enterContainer(depth: depth) else { return }
        var count = 0
        var reference: Range<Int>?
        while true {
            skipWhitespace()
            var name: Range<Int>?
            if isObject {
                guard !atEnd, current == UInt8(ascii: "\"") else { throw error("expected a member name") }
                let start = position
                try skipString()
                name = start..<position
                skipWhitespace()
                try expect(UInt8(ascii: ":"), "':'")
                skipWhitespace()
            }
            do {
                if let name, namesDescriptor(name) {
                    let start = position
                    try skipValue(depth: depth)
                    reference = start..<position
                } else {
                    try collectDescriptorReferences(depth: depth, into: &found)
                }
            } catch var problem as FileDescriptorReferences.Problem {
                // A member's name is decoded only for the path of a value refused.
                problem.reversedPath.append(name.map { .member(memberText($0)) } ?? .index(count))
                throw problem
            }
            count += 1
            skipWhitespace()
            guard !atEnd else { throw error("unexpected end of input") }
            if current == UInt8(ascii: ",") { position += 1; continue }
            if current == close { position += 1; break }
            throw error(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
        }
        guard let reference else { return }
        // Checked on the text: a repeated "$fd" is another member too.
        guard count == 1 else { throw FileDescriptorReferences.Problem(.notAlone) }
        guard let index = EnvelopeParser.integer(bytes, reference) else {
            let type = EnvelopeParser.decode(bytes, reference)?.typeName ?? "a value"
            throw FileDescriptorReferences.Problem(.notAnIndex(got: type))
        }
        try found.insert(index)
    }

    /// Whether a member name (its checked JSON string, quotes included) is
    /// `$fd`: 5 bytes plain, or at most 20 with `\u` escapes (6 bytes for
    /// each of its 3 characters), decoded only then.
    private func namesDescriptor(_ name: Range<Int>) -> Bool {
        let start = name.lowerBound
        if name.count == 5 {
            return bytes[start + 1] == UInt8(ascii: "$") && bytes[start + 2] == UInt8(ascii: "f")
                && bytes[start + 3] == UInt8(ascii: "d")
        }
        guard name.count > 5, name.count <= 20, bytes[name].contains(UInt8(ascii: "\\")) else { return false }
        return memberText(name) == FileDescriptorReferences.member
    }

    /// A member name's text, for a message (the name was already checked).
    private func memberText(_ name: Range<Int>) -> String {
        var parser = JSONParser(UnsafeRawBufferPointer(rebasing: bytes[name]))
        return (try? parser.parseString()) ?? String(decoding: bytes[name].dropFirst().dropLast(), as: UTF8.self)
    }
}
