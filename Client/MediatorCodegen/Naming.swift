/// How JSON names become identifiers (contract section 2): words are split at
/// `_`, `-`, `.`, spaces and lower-to-upper case changes, then joined in the
/// casing each language expects.
enum Naming {
    /// The words of a JSON name: `note_kind` and `noteKind` both give
    /// `["note", "kind"]` (case kept); `HTTPServer` gives `["HTTP", "Server"]`.
    static func words(_ name: String) -> [String] {
        var words: [String] = []
        var current: [Character] = []
        let characters = Array(name)
        func flush() {
            if !current.isEmpty { words.append(String(current)) }
            current = []
        }
        for (index, character) in characters.enumerated() {
            guard character.isLetter || character.isNumber else {
                flush()
                continue
            }
            if let previous = current.last, character.isUppercase {
                let next = index + 1 < characters.count ? characters[index + 1] : nil
                // A new word starts at `kK` (noteKind), and at the last
                // capital of a run followed by lower case (HTTPServer).
                if previous.isLowercase || previous.isNumber
                    || (previous.isUppercase && next.map { $0.isLowercase } == true)
                {
                    flush()
                }
            }
            current.append(character)
        }
        flush()
        return words
    }

    static func upperCamel(_ name: String) -> String {
        let joined = words(name).map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        return identifierStart(joined, fallback: "Value")
    }

    static func lowerCamel(_ name: String) -> String {
        let parts = words(name)
        guard let first = parts.first else { return "value" }
        // An all-capital first word (`URL`, `ID`) is lowered as a whole.
        let head = first == first.uppercased() ? first.lowercased() : first.prefix(1).lowercased() + first.dropFirst()
        let tail = parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }
        return identifierStart(head + tail.joined(), fallback: "value")
    }

    static func snake(_ name: String) -> String {
        identifierStart(words(name).map { $0.lowercased() }.joined(separator: "_"), fallback: "value")
    }

    static func upperSnake(_ name: String) -> String {
        identifierStart(words(name).map { $0.uppercased() }.joined(separator: "_"), fallback: "VALUE")
    }

    /// Identifiers cannot be empty or begin with a digit.
    private static func identifierStart(_ text: String, fallback: String) -> String {
        guard let first = text.first else { return fallback }
        return first.isNumber ? "_" + text : text
    }

    /// Swift keywords that need backticks as member, case or method names.
    static let swiftKeywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init",
        "inout", "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public",
        "rethrows", "static", "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue",
        "default", "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return",
        "throw", "switch", "where", "while", "Any", "as", "await", "false", "is", "nil", "self", "Self",
        "super", "throws", "true", "try", "_", "Type", "Protocol", "some", "any", "consume", "borrowing",
        "consuming", "copy", "discard", "each", "package", "macro", "sending",
    ]

    static func swiftEscaped(_ identifier: String) -> String {
        swiftKeywords.contains(identifier) ? "`\(identifier)`" : identifier
    }

    static let pythonKeywords: Set<String> = [
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
        "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
        "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
    ]

    /// Keywords, and `self` (a field or parameter named `self` would hide it), get a trailing `_`.
    static func pythonEscaped(_ identifier: String) -> String {
        pythonKeywords.contains(identifier) || identifier == "self" ? identifier + "_" : identifier
    }

    /// The module/file stem of a target: `Notes` → `notes`, `org.example-x` → `org_example_x`.
    static func pythonModule(_ target: String) -> String {
        String(target.lowercased().map { $0 == "." || $0 == "-" ? "_" : $0 })
    }
}

/// Hands out names that are unique in one namespace: a name already taken
/// gets the suffix 2, then 3, and so on, in the order names are asked for.
struct NameAllocator {
    private(set) var taken: Set<String>

    init(reserved: Set<String> = []) {
        taken = reserved
    }

    mutating func unique(_ base: String) -> String {
        var candidate = base
        var suffix = 2
        while taken.contains(candidate) {
            candidate = base + String(suffix)
            suffix += 1
        }
        taken.insert(candidate)
        return candidate
    }
}
