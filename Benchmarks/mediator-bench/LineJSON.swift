// Just enough JSON for the benchmark: walk the members of one top-level
// object and remember where `id`, `params`, `result`, `error` and `action`
// sit, skipping every value without decoding it. Responses are built by
// splicing those byte ranges.
//
// Not MediatorProtocol's EnvelopeParser on purpose: that one validates and
// decodes, which would add client-side cost to every figure, and most of all
// to the direct baseline the broker is compared against.

struct TopLevelMembers {
    var id: Range<Int>?
    var params: Range<Int>?
    var result: Range<Int>?
    var error: Range<Int>?
    var hasAction = false
}

enum LineJSON {
    /// The members of the object on `line`, or nil when it is not a well-formed object.
    static func scan(_ line: UnsafeRawBufferPointer) -> TopLevelMembers? {
        let bytes = line.bindMemory(to: UInt8.self)
        let n = bytes.count
        var i = 0
        var members = TopLevelMembers()

        @inline(__always) func skipSpace() {
            while i < n, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0D || bytes[i] == 0x0A { i += 1 }
        }
        /// `i` is on the opening quote; leaves `i` after the closing quote.
        @inline(__always) func skipString() -> Bool {
            i += 1
            while i < n {
                let c = bytes[i]
                if c == 0x5C { i += 2; continue }  // backslash escape
                i += 1
                if c == 0x22 { return true }
            }
            return false
        }
        func skipValue() -> Bool {
            guard i < n else { return false }
            switch bytes[i] {
            case 0x22:
                return skipString()
            case 0x7B, 0x5B:  // { [
                var depth = 0
                while i < n {
                    switch bytes[i] {
                    case 0x22:
                        if !skipString() { return false }
                        continue
                    case 0x7B, 0x5B: depth += 1
                    case 0x7D, 0x5D:
                        depth -= 1
                        if depth == 0 { i += 1; return true }
                    default: break
                    }
                    i += 1
                }
                return false
            default:  // number, true, false, null
                let begin = i
                while i < n {
                    let c = bytes[i]
                    if c == 0x2C || c == 0x7D || c == 0x5D || c == 0x20 || c == 0x09 || c == 0x0D || c == 0x0A { break }
                    i += 1
                }
                return i > begin
            }
        }
        func keyIs(_ start: Int, _ end: Int, _ name: StaticString) -> Bool {
            guard end - start == name.utf8CodeUnitCount else { return false }
            let p = name.utf8Start
            for k in 0..<(end - start) where bytes[start + k] != p[k] { return false }
            return true
        }

        skipSpace()
        guard i < n, bytes[i] == 0x7B else { return nil }
        i += 1
        skipSpace()
        if i < n, bytes[i] == 0x7D { return members }
        while true {
            skipSpace()
            guard i < n, bytes[i] == 0x22 else { return nil }
            let keyStart = i + 1
            guard skipString() else { return nil }
            let keyEnd = i - 1
            skipSpace()
            guard i < n, bytes[i] == 0x3A else { return nil }
            i += 1
            skipSpace()
            let valueStart = i
            guard skipValue() else { return nil }
            let value = valueStart..<i
            switch keyEnd - keyStart {
            case 2 where keyIs(keyStart, keyEnd, "id"): members.id = value
            case 5 where keyIs(keyStart, keyEnd, "error"): members.error = value
            case 6:
                if keyIs(keyStart, keyEnd, "params") {
                    members.params = value
                } else if keyIs(keyStart, keyEnd, "result") {
                    members.result = value
                } else if keyIs(keyStart, keyEnd, "action") {
                    members.hasAction = true
                }
            default: break
            }
            skipSpace()
            guard i < n else { return nil }
            if bytes[i] == 0x2C { i += 1; continue }
            if bytes[i] == 0x7D { return members }
            return nil
        }
    }

    /// A decimal integer in `range` of `line`, or nil.
    static func integer(_ line: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int? {
        guard !range.isEmpty else { return nil }
        var value = 0
        for k in range {
            let c = line[k]
            guard c >= 0x30 && c <= 0x39 else { return nil }
            value = value &* 10 &+ Int(c - 0x30)
        }
        return value
    }

    static func text(_ line: UnsafeRawBufferPointer, _ range: Range<Int>? = nil) -> String {
        let r = range ?? 0..<line.count
        return String(decoding: UnsafeRawBufferPointer(rebasing: line[r]), as: UTF8.self)
    }
}

/// The call every benchmark client makes: target `Bench` (or another echo
/// target), action `echo`, params `{"s":"<payload>"}`, with a fresh integer id.
struct EchoRequest {
    static let prefix: [UInt8] = Array(#"{"id":"#.utf8)
    let suffix: [UInt8]
    /// The exact bytes the echoed `result` must have: the params object.
    let params: [UInt8]

    /// The string in params: `bytes` letters and digits (nothing to escape).
    static func payload(bytes: Int) -> [UInt8] {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        return (0..<max(bytes, 1)).map { alphabet[$0 % alphabet.count] }
    }

    init(payloadBytes: Int, target: String = EchoComponent.defaultTarget) {
        let payload = Self.payload(bytes: payloadBytes)
        params = Array(#"{"s":""#.utf8) + payload + Array(#""}"#.utf8)
        suffix = Array(#","target":""#.utf8) + Array(target.utf8) + Array(#"","action":"echo","params":"#.utf8) + params + Array("}\n".utf8)
    }

    func append(id: Int, to out: ByteBuffer) {
        out.append(Self.prefix)
        out.append(decimal: id)
        out.append(suffix)
    }

    /// Checks a response line: a `result` equal to the params sent. Returns its id.
    func check(_ line: UnsafeRawBufferPointer) throws -> Int {
        guard let members = LineJSON.scan(line), let idRange = members.id,
              let id = LineJSON.integer(line, idRange) else {
            throw BenchError("unexpected line: \(LineJSON.text(line))")
        }
        guard let result = members.result else {
            throw BenchError("call failed: \(LineJSON.text(line))")
        }
        guard result.count == params.count else {
            throw BenchError("echo mismatch: \(LineJSON.text(line))")
        }
        return id
    }
}
