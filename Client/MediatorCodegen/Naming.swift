/// How JSON names become identifiers (contract section 2): words are split at
/// `_`, `-`, `.`, spaces and lower-to-upper case changes, then joined in the
/// casing each language expects.
///
/// Identifiers are ASCII: Swift and Python accept different sets of other
/// characters (`²` is a Swift identifier character, not a Python one), and
/// Python folds identifiers by NFKC (`ﬁ` is `fi`), so two names distinct in
/// one language could be one in the other. Each non-ASCII character becomes
/// a word of its own, `u` and its code point in hex (`x²` → `x_u00b2`);
/// names that then collide get suffixes (``NameAllocator``).
enum Naming {
    /// The words of a JSON name: `note_kind` and `noteKind` both give
    /// `["note", "kind"]` (case kept); `HTTPServer` gives `["HTTP", "Server"]`;
    /// `café` gives `["caf", "u00e9"]`.
    static func words(_ name: String) -> [String] {
        var words: [String] = []
        var current: [Character] = []
        let characters = Array(name)
        func flush() {
            if !current.isEmpty { words.append(String(current)) }
            current = []
        }
        for (index, character) in characters.enumerated() {
            guard character.isASCII else {
                flush()
                words += character.unicodeScalars.map(codePointWord)
                continue
            }
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

    /// `u00b2`: at least four hex digits, as Python's `\u` escape writes it.
    private static func codePointWord(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16)
        return "u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
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

    /// The modules a generated Python module imports: a module of the same
    /// name would import itself in their place.
    static let pythonImportedModules: Set<String> = ["dataclasses", "enum", "typing", "mediator", "__future__"]

    /// The module/file stem of a target: `Notes` → `notes`, `org.example-x` →
    /// `org_example_x`; a keyword (`class`) or an imported module's name
    /// (`typing`) gets a trailing `_`, so that `import` can name it.
    static func pythonModule(_ target: String) -> String {
        let stem = String(target.lowercased().map { $0 == "." || $0 == "-" ? "_" : $0 })
        return pythonImportedModules.contains(stem) ? stem + "_" : pythonEscaped(stem)
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
