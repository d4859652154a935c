/// The name rules of contract section 3 and the subscription patterns of
/// section 6, checked on UTF-8 bytes.
///
/// These run for every message the daemon routes, so they never build
/// intermediate strings: each check is one pass over the bytes, and a name
/// that is too long is rejected before it is read at all.
public enum NameRules {
    /// The longest target, action or event name, in UTF-8 bytes.
    public static let maxNameBytes = 128

    /// Whether `s` is a target name: `[A-Za-z][A-Za-z0-9_.-]*`, at most 128 bytes.
    public static func isValidTarget(_ s: String) -> Bool {
        isValidName(s, firstAllowsUnderscore: false)
    }

    /// Whether `s` is an action name: `[A-Za-z_][A-Za-z0-9_.-]*`, at most 128 bytes.
    ///
    /// Unlike targets, actions may start with `_` (components use that for
    /// private or internal actions).
    public static func isValidAction(_ s: String) -> Bool {
        isValidName(s, firstAllowsUnderscore: true)
    }

    /// Whether `s` is an event name; the rule is the target rule.
    public static func isValidEvent(_ s: String) -> Bool {
        isValidName(s, firstAllowsUnderscore: false)
    }

    /// Whether `s` is one of the names only the daemon may send (`mediator.` prefix).
    public static func isReservedEvent(_ s: String) -> Bool {
        s.utf8.starts(with: reservedPrefix)
    }

    /// Whether `pattern` is a subscription pattern: an exact event name, an
    /// event name followed by `.*` (such as `user.*`), or `*` alone.
    public static func isValidEventPattern(_ pattern: String) -> Bool {
        let bytes = pattern.utf8
        if bytes.count == 1 && bytes.first == star { return true }
        if bytes.last == star {
            // `P.*`: the part before the star, dot included, must be a valid
            // event name that ends in `.`; the star itself is not a name byte.
            let prefix = bytes.dropLast()
            return prefix.last == dot && isValidName(prefix, firstAllowsUnderscore: false)
        }
        return isValidName(bytes, firstAllowsUnderscore: false)
    }

    /// Whether a subscription `pattern` selects `event`.
    ///
    /// `*` matches every event; `user.*` matches any event that starts with
    /// `user.` and has at least one more byte (`user.login`, `user.a.b`, but
    /// neither `user` nor `users.x`); any other pattern matches only itself.
    /// The pattern is assumed valid (see ``isValidEventPattern(_:)``).
    public static func eventPattern(_ pattern: String, matches event: String) -> Bool {
        let patternBytes = pattern.utf8
        guard patternBytes.last == star else { return patternBytes.elementsEqual(event.utf8) }
        if patternBytes.count == 1 { return true }
        let prefix = patternBytes.dropLast()
        let eventBytes = event.utf8
        return eventBytes.count > prefix.count && eventBytes.starts(with: prefix)
    }

    // MARK: - Bytes

    private static let star = UInt8(ascii: "*")
    private static let dot = UInt8(ascii: ".")
    private static let reservedPrefix: [UInt8] = Array("mediator.".utf8)

    /// A native string's bytes are read in place: stepping a String's
    /// UTF-8 view index by index costs several times more, and names are
    /// checked on every request.
    private static func isValidName(_ s: String, firstAllowsUnderscore: Bool) -> Bool {
        s.utf8.withContiguousStorageIfAvailable { isValidName($0, firstAllowsUnderscore: firstAllowsUnderscore) }
            ?? isValidName(s.utf8, firstAllowsUnderscore: firstAllowsUnderscore)
    }

    private static func isValidName<Bytes: Collection>(
        _ bytes: Bytes,
        firstAllowsUnderscore: Bool
    ) -> Bool where Bytes.Element == UInt8 {
        let count = bytes.count
        guard count > 0, count <= maxNameBytes else { return false }
        var index = bytes.startIndex
        let first = bytes[index]
        guard isLetter(first) || (firstAllowsUnderscore && first == UInt8(ascii: "_")) else { return false }
        bytes.formIndex(after: &index)
        while index != bytes.endIndex {
            guard isNameByte(bytes[index]) else { return false }
            bytes.formIndex(after: &index)
        }
        return true
    }

    @inline(__always)
    private static func isLetter(_ byte: UInt8) -> Bool {
        // Folding to lower case maps `A`...`Z` onto `a`...`z` and nothing
        // else onto that range.
        let lower = byte | 0x20
        return lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z")
    }

    @inline(__always)
    private static func isNameByte(_ byte: UInt8) -> Bool {
        isLetter(byte)
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
    }
}
