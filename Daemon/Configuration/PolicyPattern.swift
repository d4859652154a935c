import MediatorProtocol

/// The name patterns of policy rules: exact names, `prefix.*`, `*`; and
/// `TARGET/ACTION` pairs of them for calls.
extension Policy {
    /// A name pattern: an exact name, a prefix followed by `.*`, or `*`.
    ///
    /// `Net.*` matches any name that starts with `Net.` and has at least one
    /// more byte (`Net.wifi`, `Net.a.b`, but neither `Net` nor `Network`),
    /// as subscription patterns do.
    package enum Pattern: Sendable, Hashable, CustomStringConvertible {
        /// `*`: every name.
        case any
        /// `P.*`, kept as `P.` (the dot included).
        case prefix(String)
        /// One name.
        case exact(String)

        /// Which names a pattern is about, for the rules of its text.
        package enum Kind: Sendable {
            case target, action, event

            func isValidName(_ name: String) -> Bool {
                switch self {
                case .target: return NameRules.isValidTarget(name)
                case .action: return NameRules.isValidAction(name)
                case .event: return NameRules.isValidEvent(name)
                }
            }
        }

        /// Reads `*`, `NAME.*` or `NAME`, where NAME follows the name rules
        /// of `kind`; nil for anything else (`Net*`, `*.x`, `Net.`).
        package init?(_ text: String, kind: Kind) {
            let bytes = text.utf8
            if bytes.count == 1 && bytes.first == UInt8(ascii: "*") {
                self = .any
                return
            }
            if bytes.last == UInt8(ascii: "*") {
                let prefix = bytes.dropLast()
                guard prefix.last == UInt8(ascii: "."), kind.isValidName(String(decoding: prefix, as: UTF8.self)) else {
                    return nil
                }
                self = .prefix(String(decoding: prefix, as: UTF8.self))
                return
            }
            guard kind.isValidName(text) else { return nil }
            self = .exact(text)
        }

        /// Whether `name` is one of the names the pattern selects.
        package func matches(_ name: String) -> Bool {
            switch self {
            case .any: return true
            case .prefix(let prefix):
                return name.utf8.count > prefix.utf8.count && name.utf8.starts(with: prefix.utf8)
            case .exact(let exact): return name.utf8.elementsEqual(exact.utf8)
            }
        }

        /// Whether every name `other` selects is also selected by this
        /// pattern: `*` covers everything; `x.*` covers `x.*`, `x.y.*` and
        /// any name it matches; a name covers only itself.
        package func covers(_ other: Pattern) -> Bool {
            switch (self, other) {
            case (.any, _): return true
            case (.prefix, .any): return false
            case (.prefix(let mine), .prefix(let theirs)): return theirs.utf8.starts(with: mine.utf8)
            case (.prefix, .exact(let name)): return matches(name)
            case (.exact(let mine), .exact(let theirs)): return mine.utf8.elementsEqual(theirs.utf8)
            case (.exact, _): return false
            }
        }

        /// The pattern as written: `*`, `Net.*`, `Notes`.
        package var description: String {
            switch self {
            case .any: return "*"
            case .prefix(let prefix): return prefix + "*"
            case .exact(let name): return name
            }
        }
    }

    /// A call pattern: `TARGET/ACTION`, each side a ``Pattern``
    /// (`Notes/*`, `*/ping`, `Net.*/get`, `*/*`).
    package struct CallPattern: Sendable, Hashable, CustomStringConvertible {
        package var target: Pattern
        package var action: Pattern

        package init(target: Pattern, action: Pattern) {
            self.target = target
            self.action = action
        }

        /// Reads `TARGET/ACTION`; nil unless there is exactly one `/` and
        /// both sides are patterns.
        package init?(_ text: String) {
            let sides = text.utf8.split(separator: UInt8(ascii: "/"), maxSplits: 2, omittingEmptySubsequences: false)
            guard sides.count == 2,
                let target = Pattern(String(decoding: sides[0], as: UTF8.self), kind: .target),
                let action = Pattern(String(decoding: sides[1], as: UTF8.self), kind: .action)
            else { return nil }
            self.init(target: target, action: action)
        }

        /// Every call: `*/*`.
        package static let any = CallPattern(target: .any, action: .any)

        package func matches(target: String, action: String) -> Bool {
            self.target.matches(target) && self.action.matches(action)
        }

        package var description: String { "\(target)/\(action)" }
    }
}
