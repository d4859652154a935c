/// A URL for `mediator/open` (contract section 6): `SCHEME://TARGET/ACTION?k=v&...`.
///
/// The daemon turns it into a call of ACTION on TARGET whose `params` are the
/// query items as strings. Parsing is done here, on UTF-8 bytes and without
/// Foundation, so that every peer and the daemon read a URL the same way.
///
/// Decisions where the contract leaves room:
/// - The scheme must match `[A-Za-z][A-Za-z0-9+.-]*` and is kept lower-cased,
///   since URL schemes are case-insensitive. Target and action keep their case.
/// - TARGET and ACTION are taken raw (no percent-decoding) and must pass
///   ``NameRules``; so user info (`u@host`), a port (`host:80`) or escapes in
///   them are rejected.
/// - A single trailing slash after ACTION (`app://T/show/`) is tolerated, as
///   launchers often add one; any further segment (`app://T/show/x`,
///   `app://T/show//`) is rejected.
/// - A `#fragment` is rejected rather than dropped, so that a value holding a
///   raw `#` is not silently cut short; write `%23` instead.
/// - An empty query (`app://T/show?`) and empty items (`a=1&&b=2`) are
///   allowed and add nothing. An item without `=` gives an empty string.
///   An item with an empty key (`=v`) is rejected.
/// - Keys and values are percent-decoded as UTF-8; `+` stays `+`. A `%` not
///   followed by two hex digits, or escapes that decode to invalid UTF-8, are
///   rejected. Raw non-ASCII text is accepted as is; spaces and control
///   characters must be escaped.
/// - The last of repeated keys wins.
///
/// Every rejection is a `bad_request` error.
public struct MediatorURL: Sendable, Hashable {
    /// The scheme, without `://`, lower-cased (`app`).
    public var scheme: String
    /// The target: the part before the first `/`, as written.
    public var target: String
    /// The action: the one path segment after it, as written.
    public var action: String
    /// The query's items, percent-decoded; every value a string.
    public var params: [String: String]

    /// A URL's parts, as `mediator/open` calls them.
    public init(scheme: String, target: String, action: String, params: [String: String] = [:]) {
        self.scheme = scheme
        self.target = target
        self.action = action
        self.params = params
    }

    /// Parses the contract's URL form; throws `bad_request` with a message
    /// that says what is wrong.
    public init(parsing text: String) throws(MediatorError) {
        let bytes = Array(text.utf8)
        let end = bytes.count

        if bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
            throw Self.bad("URL must not contain spaces or control characters")
        }
        if bytes.contains(UInt8(ascii: "#")) {
            throw Self.bad("URL must not have a fragment (\"#\"); escape a literal # as %23")
        }

        // SCHEME ":" "//"
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else {
            throw Self.bad("URL has no scheme; expected SCHEME://TARGET/ACTION")
        }
        guard Self.isValidScheme(bytes[0..<colon]) else {
            throw Self.bad("invalid URL scheme \"\(String(decoding: bytes[0..<colon], as: UTF8.self))\"")
        }
        guard end - colon >= 3, bytes[colon + 1] == Self.slash, bytes[colon + 2] == Self.slash else {
            throw Self.bad("URL must have the form SCHEME://TARGET/ACTION")
        }
        let scheme = String(decoding: bytes[0..<colon].map(Self.lowercased), as: UTF8.self)

        // The query starts at the first `?`; everything before it is host and path.
        let queryMark = bytes[(colon + 3)...].firstIndex(of: UInt8(ascii: "?"))
        let pathEnd = queryMark ?? end

        // TARGET
        let hostStart = colon + 3
        let hostEnd = bytes[hostStart..<pathEnd].firstIndex(of: Self.slash) ?? pathEnd
        let target = String(decoding: bytes[hostStart..<hostEnd], as: UTF8.self)
        guard !target.isEmpty else { throw Self.bad("URL has no target") }
        guard NameRules.isValidTarget(target) else { throw Self.bad("invalid target name \"\(target)\" in URL") }

        // "/" ACTION ["/"]
        guard hostEnd < pathEnd else { throw Self.bad("URL has no action; expected SCHEME://TARGET/ACTION") }
        let actionStart = hostEnd + 1
        let actionEnd = bytes[actionStart..<pathEnd].firstIndex(of: Self.slash) ?? pathEnd
        guard actionEnd > actionStart else { throw Self.bad("URL has no action; expected SCHEME://TARGET/ACTION") }
        if actionEnd < pathEnd && actionEnd + 1 != pathEnd {
            throw Self.bad("URL path must be a single segment (the action)")
        }
        let action = String(decoding: bytes[actionStart..<actionEnd], as: UTF8.self)
        guard NameRules.isValidAction(action) else { throw Self.bad("invalid action name \"\(action)\" in URL") }

        // ?k=v&...
        var params: [String: String] = [:]
        if let queryMark {
            var itemStart = queryMark + 1
            while itemStart <= end {
                let itemEnd = bytes[itemStart..<end].firstIndex(of: UInt8(ascii: "&")) ?? end
                if itemEnd > itemStart {
                    let equals = bytes[itemStart..<itemEnd].firstIndex(of: UInt8(ascii: "="))
                    let keyEnd = equals ?? itemEnd
                    guard keyEnd > itemStart else { throw Self.bad("URL query item has an empty key") }
                    let key = try Self.percentDecoded(bytes[itemStart..<keyEnd])
                    if let equals {
                        params[key] = try Self.percentDecoded(bytes[(equals + 1)..<itemEnd])
                    } else {
                        params[key] = ""
                    }
                }
                itemStart = itemEnd + 1
            }
        }

        self.init(scheme: scheme, target: target, action: action, params: params)
    }

    /// `params` as the JSON object the routed call carries.
    public var paramsJSON: JSONValue {
        .object(params.mapValues { .string($0) })
    }

    // MARK: - Helpers

    private static let slash = UInt8(ascii: "/")

    private static func bad(_ message: String) -> MediatorError {
        MediatorError(.badRequest, message)
    }

    private static func isValidScheme(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard let first = bytes.first, isLetter(first) else { return false }
        return bytes.dropFirst().allSatisfy { byte in
            isLetter(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        let lower = byte | 0x20
        return lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z")
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Decodes `%XX` escapes; `+` is left alone. The result must be valid UTF-8.
    private static func percentDecoded(_ bytes: ArraySlice<UInt8>) throws(MediatorError) -> String {
        guard bytes.contains(UInt8(ascii: "%")) else {
            // No escapes: the bytes came from a String, so they are valid UTF-8.
            return String(decoding: bytes, as: UTF8.self)
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            guard byte == UInt8(ascii: "%") else {
                decoded.append(byte)
                index += 1
                continue
            }
            guard index + 2 < bytes.endIndex,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            else {
                throw bad("invalid percent escape in URL query")
            }
            decoded.append(high << 4 | low)
            index += 3
        }
        // Validate first: `String(decoding:)` would replace bad bytes silently.
        var codec = UTF8()
        var iterator = decoded.makeIterator()
        scan: while true {
            switch codec.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: break scan
            case .error: throw bad("percent escapes in URL query are not valid UTF-8")
            }
        }
        return String(decoding: decoded, as: UTF8.self)
    }
}
