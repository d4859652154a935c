/// Accumulates lines of generated source with indentation.
struct SourceWriter {
    private(set) var text = ""
    private var level = 0
    let indentUnit: String

    init(indentUnit: String = "    ") {
        self.indentUnit = indentUnit
    }

    mutating func line(_ content: String = "") {
        if content.isEmpty {
            text += "\n"
        } else {
            text += String(repeating: indentUnit, count: level) + content + "\n"
        }
    }

    mutating func indented(_ body: (inout SourceWriter) -> Void) {
        level += 1
        body(&self)
        level -= 1
    }

    /// `/// ...` (or `# ...`) lines for a description, one per line of it.
    mutating func comment(_ text: String?, prefix: String) {
        guard let text, !text.isEmpty else { return }
        // Any line break (`\r`, U+2028...) would end a comment early.
        for part in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            line(part.isEmpty ? prefix : "\(prefix) \(part)")
        }
    }

    /// Swift: `let name: type`, set by `assignment` in a `do` (`doHead`)
    /// whose `catch` runs `handler`.
    mutating func swiftCatching(
        _ name: String, _ type: String, doHead: String = "do", _ assignment: String, catch handler: String
    ) {
        line("let \(name): \(type)")
        line("\(doHead) {")
        indented { $0.line("\(name) = \(assignment)") }
        line("} catch {")
        indented { $0.line(handler) }
        line("}")
    }
}
